import Foundation
import NotificationHubs

/// A registration as the hub keeps it.
public struct StoredRegistration: Sendable, Hashable {
    public var hub: String
    /// The registration; its `registrationId` and `etag` are always set.
    public var registration: Registration
    public var created: Date
    public var updated: Date

    public var id: String { registration.registrationId ?? "" }

    public init(hub: String, registration: Registration, created: Date, updated: Date) {
        self.hub = hub
        self.registration = registration
        self.created = created
        self.updated = updated
    }
}

/// A notification the hub accepted.
public struct StoredNotification: Sendable, Hashable {
    public var hub: String
    public var id: String
    public var format: NotificationFormat
    /// The `ServiceBusNotification-Tags` expression, `nil` for a broadcast.
    public var tagExpression: String?
    public var body: String
    /// Headers passed to the push service (`apns-*`).
    public var headers: [String: String]
    /// The device handle of a direct send.
    public var directHandle: String?
    /// The device handles of a direct batch send (`DirectBatch`).
    public var batchHandles: [String]?
    public var isTest: Bool
    public var enqueued: Date
    public var state: NotificationDetails.State
    public var started: Date?
    public var ended: Date?
    /// Outcome name (`Success`, `InvalidNotificationSize`…) → count.
    public var outcomeCounts: [String: Int]
    /// The first devices' outcomes, kept for `explain` (`SendExplanation.lineLimit`).
    public var report: [SendExplanation.Line] = []
    /// When a scheduled notification is due (its state is `scheduled` until then).
    public var scheduledFor: Date?

    public init(
        hub: String, id: String, format: NotificationFormat, tagExpression: String?, body: String,
        headers: [String: String] = [:],
        directHandle: String? = nil, isTest: Bool = false, enqueued: Date = Date()
    ) {
        self.hub = hub
        self.id = id
        self.format = format
        self.tagExpression = tagExpression
        self.body = body
        self.headers = headers
        self.directHandle = directHandle
        self.isTest = isTest
        self.enqueued = enqueued
        self.state = .enqueued
        self.outcomeCounts = [:]
    }
}

extension StoredNotification {
    /// A direct browser send's keys, from its `P256DH` and `Auth` headers.
    public var webPushKeys: WebPushKeys? {
        guard let p256dh = headers["p256dh"], let auth = headers["auth"] else { return nil }
        return WebPushKeys(p256dh: p256dh, auth: auth)
    }
}

/// A message for one device: as the dispatcher hands it to a push service, and as the
/// sandbox push service's delivery log keeps it.
public struct Delivery: Sendable, Hashable {
    /// Position in the hub's delivery log; the stream's event id (0 for services that keep
    /// no log).
    public var seq: Int64
    public var hub: String
    /// The device handle: an APNs token lower-cased, other handles as given (FCM tokens and
    /// Web Push endpoints are case-sensitive).
    public var device: String
    public var notificationId: String
    /// The template that rendered it; empty for native sends.
    public var template: String
    /// The APNs payload.
    public var payload: String
    public var delivered: Date
    /// The send's tag expression, when it had one.
    public var tags: String?
    /// A browser's keys, for Web Push (never stored).
    public var webPushKeys: WebPushKeys?

    public init(
        seq: Int64, hub: String, device: String, notificationId: String, template: String, payload: String, delivered: Date,
        tags: String?, webPushKeys: WebPushKeys? = nil
    ) {
        self.webPushKeys = webPushKeys
        self.seq = seq
        self.hub = hub
        self.device = device
        self.notificationId = notificationId
        self.template = template
        self.payload = payload
        self.delivered = delivered
        self.tags = tags
    }
}

extension Delivery {
    /// The delivery as the sandbox push service shows it.
    public func sandboxDelivery(epoch: String) -> SandboxDelivery {
        SandboxDelivery(
            seq: seq, notificationId: notificationId, hub: hub, device: device, template: template.isEmpty ? nil : template,
            tags: tags,
            deliveredAt: W3CDate.format(delivered), payload: (try? JSONValue(parsing: payload)) ?? .string(payload), epoch: epoch)
    }
}

extension Delivery {
    /// What this delivery's frame shares with the other deliveries of its notification
    /// through its template (`SandboxDelivery.FrameShape`).
    public func frameShape(epoch: String) -> SandboxDelivery.FrameShape {
        SandboxDelivery.FrameShape(
            notificationId: notificationId, hub: hub, template: template.isEmpty ? nil : template, tags: tags,
            deliveredAt: W3CDate.format(delivered), payloadJSON: payload, epoch: epoch)
    }

    /// The Server-Sent Events frame of this delivery, as `sandboxDelivery(epoch:)` would
    /// write it, from the stored compact payload.
    public func serverSentEvent(epoch: String) -> String {
        frameShape(epoch: epoch).frame(seq: seq, device: device)
    }

    /// Whether this delivery's frame has the shape of `other`'s: same notification, template
    /// and payload, delivered at the same time.
    func sharesFrameShape(with other: Delivery) -> Bool {
        notificationId == other.notificationId && template == other.template && hub == other.hub && tags == other.tags
            && delivered == other.delivered && payload == other.payload
    }
}

/// A change to installations, registrations or the notification queue.
public enum HubMutation: Sendable {
    case upsertInstallation(hub: String, Installation)
    case deleteInstallation(hub: String, id: String)
    case upsertRegistration(StoredRegistration)
    case deleteRegistration(hub: String, id: String)
    case insertNotification(StoredNotification)
    /// An APNs token of the built-in push service (`HubSnapshot.sandboxDevices`), claimed or
    /// renewed: its claim counts from `at`.
    case claimSandboxDevice(hub: String, device: String, at: Date)
    /// A claim given up: by its terminal, by an operator, or because nothing used it.
    case releaseSandboxDevice(hub: String, device: String)
    /// A scheduled notification is due: enqueued for dispatch.
    case fireScheduled(hub: String, id: String)
    /// A scheduled notification will not be sent.
    case cancelScheduled(hub: String, id: String, at: Date)
}

/// The outcome of dispatching one notification, written in one step.
public struct DispatchRecord: Sendable {
    public var notification: StoredNotification
    /// Deliveries to write; their `seq` is assigned by the store.
    public var deliveries: [Delivery]

    public init(notification: StoredNotification, deliveries: [Delivery]) {
        self.notification = notification
        self.deliveries = deliveries
    }
}

/// Everything the hub loads at start.
public struct HubSnapshot: Sendable {
    public var installations: [(hub: String, installation: Installation)] = []
    public var registrations: [StoredRegistration] = []
    /// The APNs tokens terminals claimed for the built-in push service, by hub.
    public var sandboxDevices: [(hub: String, device: String)] = []
    /// Rows this load could not read and moved aside.
    public var quarantined: [QuarantinedRecord] = []
    /// Rows kept aside in all, from this load and earlier ones.
    public var quarantinedTotal = 0
    public init() {}
}

/// A stored row that could not be loaded, kept aside rather than keeping the hub from starting.
public struct QuarantinedRecord: Sendable, Hashable {
    /// `installation` or `registration`.
    public var kind: String
    /// The hub and id, with characters that cannot be shown escaped.
    public var hub: String
    public var id: String
    public var reason: String
}

extension QuarantinedRecord {
    /// The record of a row's hub and id as stored (bytes, which may not be UTF-8).
    init(kind: String, storedHub hub: some Sequence<UInt8>, storedId id: some Sequence<UInt8>, reason: String) {
        func readable(_ bytes: some Sequence<UInt8>) -> String {
            String(decoding: Array(bytes), as: UTF8.self).unicodeScalars.prefix(120).map {
                StoredText.forbidden(in: String($0)) == nil ? String($0) : "\\u{\(String($0.value, radix: 16))}"
            }.joined()
        }
        self.init(kind: kind, hub: readable(hub), id: readable(id), reason: reason)
    }
}

/// Why a stored row could not be loaded.
struct QuarantineReason: Error, CustomStringConvertible {
    let description: String
}

/// The most a stored row may hold: four times the largest request body, which no request
/// could make (a stored row is its body plus what the hub adds).
let largestStoredRow = 256 << 10

extension Installation {
    /// An installation read from its stored row: its JSON, which must carry the row's id and
    /// pass every check a request's installation passes (a row written by hand gets no
    /// more trust than a request).
    static func stored(json: String, id: some Sequence<UInt8>) throws -> Installation {
        guard json.utf8.count <= largestStoredRow else {
            throw QuarantineReason(description: "the row holds \(json.utf8.count) bytes, more than any request could write")
        }
        let installation = try Installation(jsonText: json.utf8)
        guard installation.installationId.utf8.elementsEqual(id) else {
            throw QuarantineReason(description: "the id in the row differs from the one in its JSON")
        }
        _ = try installation.validatedForStorage(lastUpdate: installation.lastUpdate ?? "")
        return installation
    }
}

extension StoredRegistration {
    /// A registration read from its stored row: its Atom XML, which must carry the row's id.
    static func stored(hub: String, id: some Sequence<UInt8>, xml: String, created: Double, updated: Double) throws
        -> StoredRegistration
    {
        guard xml.utf8.count <= largestStoredRow else {
            throw QuarantineReason(description: "the row holds \(xml.utf8.count) bytes, more than any request could write")
        }
        let registration = try Registration(atom: xml)
        guard (registration.registrationId ?? "").utf8.elementsEqual(id) else {
            throw QuarantineReason(description: "the id in the row differs from the one in its XML")
        }
        _ = try registration.validatedForStorage()
        return StoredRegistration(
            hub: hub, registration: registration, created: Date(timeIntervalSince1970: created),
            updated: Date(timeIntervalSince1970: updated))
    }
}

/// Durable storage of a hub. Every method returns only once its writes are durable, but
/// `record` may leave a power loss (not a crash of the hub) to take its writes: the
/// notifications it finished are then still enqueued and are dispatched again at restart.
public protocol HubStore: Sendable {
    /// Installations and registrations, to rebuild the in-memory tables and tag index; rows
    /// that cannot be read are set aside and reported, never an error.
    func load() async throws -> HubSnapshot
    /// Applies mutations atomically, in order.
    func apply(_ mutations: [HubMutation]) async throws
    /// Writes deliveries (with the sequence numbers they carry) and final notification
    /// states atomically; returns the deliveries written (one already present is skipped).
    func record(_ dispatches: [DispatchRecord]) async throws -> [Delivery]
    /// The highest sequence number that may have been handed out: the larger of the last
    /// reservation and the last delivery written. Numbering resumes above it.
    func sequenceHighWater() async throws -> Int64
    /// Durably reserves sequence numbers up to `seq` before any of them is handed out; a
    /// reservation is never lowered.
    func reserveSequence(through seq: Int64) async throws
    /// Notifications accepted but not yet dispatched, oldest first.
    func unfinishedNotifications() async throws -> [StoredNotification]
    /// Notifications scheduled and neither fired nor cancelled.
    func scheduledNotifications() async throws -> [StoredNotification]
    func notification(hub: String, id: String) async throws -> StoredNotification?
    /// Deliveries to a device after `seq`, oldest first.
    func deliveries(hub: String, device: String, after seq: Int64, limit: Int) async throws -> [Delivery]
    /// Removes a device's deliveries; returns how many there were. A removed delivery
    /// recorded again is written again.
    func deleteDeliveries(hub: String, device: String) async throws -> Int
    /// Devices with deliveries, with their counts.
    func devices(hub: String) async throws -> [(device: String, count: Int)]
    /// Claims of the built-in push service last claimed or renewed before `before`, at most
    /// `limit`, oldest first.
    func staleSandboxDevices(before: Date, limit: Int) async throws -> [(hub: String, device: String)]
    /// A value made when the store was created: sequence numbers compare only within it.
    func epoch() async throws -> String
}

/// The store cannot be reached now: its database is down, restarting or out of connections.
/// Requests that need it are answered 503 with `Retry-After`; the hub recovers by itself
/// once the database is back.
public struct StoreUnavailable: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// The store refused an operation for a reason a retry would not mend.
public struct StoreFailure: Error, CustomStringConvertible, Sendable {
    public let description: String
}
