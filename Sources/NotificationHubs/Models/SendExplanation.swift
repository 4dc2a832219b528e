/// Why a send reached whom it reached, as the local hub explains it (`GET
/// /_inspect/{hub}/messages/{id}`, Manage): the send, the targets its tag expression matches
/// in the hub now and the near misses, each distinct template's rendering and the payload
/// check, each device's recorded outcome (the first `SendExplanation.lineLimit` devices), and
/// findings in plain words. Written by the hub, read by `breaking-news explain`.
public struct SendExplanation: Sendable, Hashable {
    /// At most this many devices' outcomes are kept per send, and this many matches listed.
    public static let lineLimit = 100

    public struct Target: Sendable, Hashable {
        /// `installation` or `registration`, and its id.
        public var kind: String
        public var id: String
        public var platform: String
        public var handle: String
        /// The template that matched (template sends).
        public var template: String?
        public var tags: [String]
        /// The push channel expired or was refused: nothing is sent to it.
        public var expired: Bool

        public init(
            kind: String, id: String, platform: String, handle: String, template: String?, tags: [String], expired: Bool
        ) {
            self.kind = kind
            self.id = id
            self.platform = platform
            self.handle = handle
            self.template = template
            self.tags = tags
            self.expired = expired
        }
    }

    public struct Rendering: Sendable, Hashable {
        public var template: String
        public var platform: String
        public var payload: String
        /// Why the payload cannot be sent, or nil when it passed.
        public var refusal: String?

        public init(template: String, platform: String, payload: String, refusal: String?) {
            self.template = template
            self.platform = platform
            self.payload = payload
            self.refusal = refusal
        }
    }

    /// One device's outcome, as recorded when the send was dispatched.
    public struct Line: Sendable, Hashable {
        public var platform: String
        public var handle: String
        public var registrationId: String
        /// The outcome's counter (`Success`, `ExpiredChannel`…) and what it means.
        public var outcome: String
        public var text: String

        public init(platform: String, handle: String, registrationId: String, outcome: String, text: String) {
            self.platform = platform
            self.handle = handle
            self.registrationId = registrationId
            self.outcome = outcome
            self.text = text
        }
    }

    public var notificationId: String
    public var hub: String
    public var format: String
    /// nil for a broadcast.
    public var tagExpression: String?
    public var state: String
    public var enqueued: String
    public var scheduledFor: String?
    /// Outcome counts by platform, then name.
    public var counts: [String: [String: Int]]
    /// Targets the expression matches now, at most `lineLimit`, and how many in all.
    public var matches: [Target]
    public var matchCount: Int
    /// Installations that hold some of the expression's tags but do not match.
    public var nearMisses: [Target]
    public var renderings: [Rendering]
    public var lines: [Line]
    /// What went wrong, or what went right, in plain words.
    public var findings: [String]

    public init(
        notificationId: String, hub: String, format: String, tagExpression: String?, state: String, enqueued: String,
        scheduledFor: String?, counts: [String: [String: Int]], matches: [Target], matchCount: Int, nearMisses: [Target],
        renderings: [Rendering], lines: [Line], findings: [String]
    ) {
        self.notificationId = notificationId
        self.hub = hub
        self.format = format
        self.tagExpression = tagExpression
        self.state = state
        self.enqueued = enqueued
        self.scheduledFor = scheduledFor
        self.counts = counts
        self.matches = matches
        self.matchCount = matchCount
        self.nearMisses = nearMisses
        self.renderings = renderings
        self.lines = lines
        self.findings = findings
    }
}

extension SendExplanation {
    public var json: JSONValue {
        func target(_ t: Target) -> JSONValue {
            .object([
                ("kind", .string(t.kind)), ("id", .string(t.id)), ("platform", .string(t.platform)),
                ("handle", .string(t.handle)), ("template", t.template.map(JSONValue.string) ?? .null),
                ("tags", .array(t.tags.map(JSONValue.string))), ("expired", .bool(t.expired)),
            ])
        }
        return .object([
            ("notificationId", .string(notificationId)), ("hub", .string(hub)), ("format", .string(format)),
            ("tagExpression", tagExpression.map(JSONValue.string) ?? .null), ("state", .string(state)),
            ("enqueued", .string(enqueued)), ("scheduledFor", scheduledFor.map(JSONValue.string) ?? .null),
            (
                "counts",
                .object(
                    counts.sorted { $0.key < $1.key }.map { platform, names in
                        (
                            platform,
                            .object(names.sorted { $0.key < $1.key }.map { ($0.key, .number(String($0.value))) })
                        )
                    })
            ),
            ("matches", .array(matches.map(target))), ("matchCount", .number(String(matchCount))),
            ("nearMisses", .array(nearMisses.map(target))),
            (
                "renderings",
                .array(
                    renderings.map {
                        .object([
                            ("template", .string($0.template)), ("platform", .string($0.platform)),
                            ("payload", .string($0.payload)), ("refusal", $0.refusal.map(JSONValue.string) ?? .null),
                        ])
                    })
            ),
            (
                "lines",
                .array(
                    lines.map {
                        .object([
                            ("platform", .string($0.platform)), ("handle", .string($0.handle)),
                            ("registrationId", .string($0.registrationId)), ("outcome", .string($0.outcome)),
                            ("text", .string($0.text)),
                        ])
                    })
            ),
            ("findings", .array(findings.map(JSONValue.string))),
        ])
    }

    /// Reads what `json` writes; a field of the wrong type is an error, a missing list empty.
    public init(json: JSONValue) throws(SendExplanationError) {
        func string(_ value: JSONValue?, _ name: String) throws(SendExplanationError) -> String {
            guard let text = value?.stringValue else { throw SendExplanationError("\(name) is missing or not text") }
            return text
        }
        func strings(_ value: JSONValue?) -> [String] { value?.arrayValue?.compactMap(\.stringValue) ?? [] }
        func number(_ value: JSONValue?) -> Int {
            if case .number(let text)? = value { return Int(text) ?? 0 }
            return 0
        }
        func target(_ value: JSONValue) throws(SendExplanationError) -> Target {
            Target(
                kind: try string(value["kind"], "kind"), id: try string(value["id"], "id"),
                platform: try string(value["platform"], "platform"), handle: try string(value["handle"], "handle"),
                template: value["template"]?.stringValue, tags: strings(value["tags"]),
                expired: value["expired"] == .bool(true))
        }
        var counts: [String: [String: Int]] = [:]
        for (platform, names) in json["counts"]?.objectMembers ?? [] {
            for (name, count) in names.objectMembers ?? [] { counts[platform, default: [:]][name] = number(count) }
        }
        var matches: [Target] = []
        for value in json["matches"]?.arrayValue ?? [] { matches.append(try target(value)) }
        var nearMisses: [Target] = []
        for value in json["nearMisses"]?.arrayValue ?? [] { nearMisses.append(try target(value)) }
        var renderings: [Rendering] = []
        for value in json["renderings"]?.arrayValue ?? [] {
            renderings.append(
                Rendering(
                    template: try string(value["template"], "template"), platform: try string(value["platform"], "platform"),
                    payload: try string(value["payload"], "payload"), refusal: value["refusal"]?.stringValue))
        }
        var lines: [Line] = []
        for value in json["lines"]?.arrayValue ?? [] {
            lines.append(
                Line(
                    platform: try string(value["platform"], "platform"), handle: try string(value["handle"], "handle"),
                    registrationId: value["registrationId"]?.stringValue ?? "", outcome: try string(value["outcome"], "outcome"),
                    text: value["text"]?.stringValue ?? ""))
        }
        self.init(
            notificationId: try string(json["notificationId"], "notificationId"), hub: try string(json["hub"], "hub"),
            format: try string(json["format"], "format"), tagExpression: json["tagExpression"]?.stringValue,
            state: try string(json["state"], "state"), enqueued: json["enqueued"]?.stringValue ?? "",
            scheduledFor: json["scheduledFor"]?.stringValue, counts: counts, matches: matches,
            matchCount: number(json["matchCount"]), nearMisses: nearMisses, renderings: renderings, lines: lines,
            findings: strings(json["findings"]))
    }
}

/// Why an explanation could not be read.
public struct SendExplanationError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
