import Foundation

/// A notification the local hub's built-in push service delivered to a device, as its stream
/// and inbox carry it. The built-in push service lives under `/_sandbox/apns/{hub}/devices/{token}/`.
public struct BuiltInPushDelivery: Sendable, Hashable {
    /// Position in the hub's delivery log: the stream's event id, the resume point.
    public var seq: Int64
    public var notificationId: String
    public var hub: String
    public var device: String
    /// The template that rendered it; nil for native sends.
    public var template: String?
    /// The send's tag expression.
    public var tags: String?
    public var deliveredAt: String
    /// The APNs payload.
    public var payload: JSONValue
    /// Identifies the hub's delivery log: sequence numbers only compare within one epoch
    /// (a hub whose database was replaced starts a new one).
    public var epoch: String?

    public init(
        seq: Int64, notificationId: String, hub: String, device: String, template: String?, tags: String?, deliveredAt: String,
        payload: JSONValue, epoch: String? = nil
    ) {
        self.seq = seq
        self.notificationId = notificationId
        self.hub = hub
        self.device = device
        self.template = template
        self.tags = tags
        self.deliveredAt = deliveredAt
        self.payload = payload
        self.epoch = epoch
    }

    /// The key a receiver dedupes on: one delivery per notification and template.
    public var dedupeKey: String { Self.dedupeKey(notificationId: notificationId, template: template) }

    /// The dedupe key of the delivery of `notificationId` through `template`.
    public static func dedupeKey(notificationId: String, template: String?) -> String {
        notificationId + "/" + (template ?? "")
    }

    /// `aps.alert` as text: the string, or the `body` (and `title`) of an alert dictionary.
    public var alertText: String? {
        guard let alert = payload["aps"]?["alert"] else { return nil }
        if let text = alert.stringValue { return text }
        let title = alert["title"]?.stringValue
        let body = alert["body"]?.stringValue
        switch (title, body) {
        case (let t?, let b?): return "\(t): \(b)"
        case (let t?, nil): return t
        case (nil, let b?): return b
        default: return nil
        }
    }

    public var json: JSONValue {
        .object(dropping: [
            ("seq", .number(String(seq))),
            ("notificationId", .string(notificationId)),
            ("hub", .string(hub)),
            ("device", .string(device)),
            ("template", template.map(JSONValue.string)),
            ("tags", tags.map(JSONValue.string)),
            ("deliveredAt", .string(deliveredAt)),
            ("payload", payload),
            ("epoch", epoch.map(JSONValue.string)),
        ])
    }

    /// Reads one delivery's JSON.
    public init(json: JSONValue) throws(BuiltInPushError) {
        guard case .number(let seqText)? = json["seq"], let seq = Int64(seqText),
            let notificationId = json["notificationId"]?.stringValue, let payload = json["payload"]
        else { throw BuiltInPushError(description: "a delivery needs seq, notificationId and payload") }
        self.init(
            seq: seq, notificationId: notificationId, hub: json["hub"]?.stringValue ?? "",
            device: json["device"]?.stringValue ?? "",
            template: json["template"]?.stringValue, tags: json["tags"]?.stringValue,
            deliveredAt: json["deliveredAt"]?.stringValue ?? "", payload: payload, epoch: json["epoch"]?.stringValue)
    }

    /// The Server-Sent Events frame of this delivery.
    public var serverSentEvent: String {
        Self.frame(
            seq: seq, notificationId: notificationId, hub: hub, device: device, template: template, tags: tags,
            deliveredAt: deliveredAt, payloadJSON: payload.text, epoch: epoch)
    }

    /// A delivery's frame: `id`, `event: notification`, and the delivery's JSON (members in
    /// `json`'s order). `payloadJSON` must be compact JSON: a frame's data is one line.
    public static func frame(
        seq: Int64, notificationId: String, hub: String, device: String, template: String?, tags: String?,
        deliveredAt: String, payloadJSON: String, epoch: String?
    ) -> String {
        FrameShape(
            notificationId: notificationId, hub: hub, template: template, tags: tags, deliveredAt: deliveredAt,
            payloadJSON: payloadJSON, epoch: epoch
        ).frame(seq: seq, device: device)
    }

    /// The query parameter naming the epoch a resume point belongs to; a hub with another
    /// epoch replays everything (receivers dedupe).
    public static let epochParameter = "epoch"

    /// The header of the built-in push service's own that carries a claim's secret: what the
    /// claim of a device token answered, and what every later stream, inbox, release and
    /// renewal of the claim sends. The token names the device; the secret proves its terminal.
    public static let claimSecretHeader = "X-Claim-Secret"

    /// The built-in push path of a device's resource (`stream`, `inbox`, `deliveries`).
    public static func path(hub: String, device: String, resource: String) -> String {
        path(hub: hub, device: device) + "/\(resource)"
    }

    /// The device itself, which a terminal claims (`PUT`).
    public static func path(hub: String, device: String) -> String {
        "/_sandbox/apns/\(PercentEncoding.encode(hub))/devices/\(device.lowercased())"
    }
}

/// A built-in push message that could not be read.
public struct BuiltInPushError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// One Server-Sent Event.
public struct ServerSentEvent: Sendable, Hashable {
    public var id: String?
    public var event: String?
    public var data: String
}

/// Reads a Server-Sent Events stream chunk by chunk (any split, LF or CRLF), per the HTML
/// specification: `data` lines joined with newlines, `id` and `event` fields, comments skipped.
/// A line or an event longer than `maximumEventBytes` is refused: the stream comes from the
/// network, and a peer that never ends a line must not grow the buffer without bound.
public struct ServerSentEventParser: Sendable {
    /// Largest line, and largest event, accepted. A delivery is a 4 KB payload and a few
    /// fields; this leaves room for any payload a push service carries.
    public static let maximumEventBytes = 1 << 20

    private var pending: [UInt8] = []
    private var data: [String] = []
    private var dataBytes = 0
    private var id: String?
    private var event: String?
    /// The last `id` seen, kept across events as the spec asks.
    public private(set) var lastEventId: String?
    /// `retry` in milliseconds, when the server sent one.
    public private(set) var retry: Int?

    public init() {}

    /// Feeds bytes; returns the events they complete. Throws once a line or an event grows
    /// past `maximumEventBytes`; the parser is then spent.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws(BuiltInPushError) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if byte == 0x0A {
                if pending.last == 0x0D { pending.removeLast() }
                if let event = line(String(decoding: pending, as: UTF8.self)) { events.append(event) }
                pending.removeAll(keepingCapacity: true)
                guard dataBytes <= Self.maximumEventBytes else { throw Self.tooLong }
            } else {
                pending.append(byte)
                guard pending.count <= Self.maximumEventBytes else { throw Self.tooLong }
            }
        }
        return events
    }

    static let tooLong = BuiltInPushError(
        description: "the stream sent a line or an event longer than \(maximumEventBytes) bytes")

    private mutating func line(_ line: String) -> ServerSentEvent? {
        if line.isEmpty {
            defer {
                data = []
                dataBytes = 0
                event = nil
                id = nil
            }
            guard !data.isEmpty else { return nil }
            return ServerSentEvent(id: id ?? lastEventId, event: event, data: data.joined(separator: "\n"))
        }
        if line.hasPrefix(":") { return nil }
        let field: Substring
        var value: Substring
        if let colon = line.firstIndex(of: ":") {
            field = line[..<colon]
            value = line[line.index(after: colon)...]
            if value.hasPrefix(" ") { value = value.dropFirst() }
        } else {
            field = Substring(line)
            value = ""
        }
        switch field {
        case "data":
            data.append(String(value))
            dataBytes += value.utf8.count + 1
        case "event": event = String(value)
        case "id":
            if !value.contains("\u{0}") {
                id = String(value)
                lastEventId = String(value)
            }
        case "retry": retry = Int(value)
        default: break
        }
        return nil
    }
}
