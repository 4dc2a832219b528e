/// The body of a test send: how many devices were reached and how (wire spec §6.5).
public struct NotificationOutcome: Sendable, Hashable {
    public struct Result: Sendable, Hashable {
        public var applicationPlatform: String
        public var pnsHandle: String
        public var registrationId: String
        public var outcome: String

        public init(applicationPlatform: String, pnsHandle: String, registrationId: String, outcome: String) {
            self.applicationPlatform = applicationPlatform
            self.pnsHandle = pnsHandle
            self.registrationId = registrationId
            self.outcome = outcome
        }
    }

    public var success: Int
    public var failure: Int
    public var results: [Result]

    public init(success: Int, failure: Int, results: [Result]) {
        self.success = success
        self.failure = failure
        self.results = results
    }

    /// Outcome text of a delivered notification.
    public static let sent = "The Notification was successfully sent to the Push Notification System"
    /// Outcome text of a payload the push service refused.
    public static let invalidPayload = "The Notification payload is invalid"
    /// Outcome text of a payload over the size limit.
    public static let payloadTooLarge = "The Notification payload is too large (InvalidNotificationSize)"

    /// The XML the service returns, elements in DataContract order.
    public var xml: String {
        var xml =
            "<NotificationOutcome xmlns=\"\(Registration.servicebusNamespace)\" xmlns:i=\"\(Registration.instanceNamespace)\">"
        xml += "<Success>\(success)</Success><Failure>\(failure)</Failure>"
        if results.isEmpty {
            xml += "<Results i:nil=\"true\"/>"
        } else {
            xml += "<Results>"
            for r in results {
                xml += "<RegistrationResult><ApplicationPlatform>\(XMLNode.escape(r.applicationPlatform))</ApplicationPlatform>"
                xml +=
                    "<PnsHandle>\(XMLNode.escape(r.pnsHandle))</PnsHandle><RegistrationId>\(XMLNode.escape(r.registrationId))</RegistrationId>"
                xml += "<Outcome>\(XMLNode.escape(r.outcome))</Outcome></RegistrationResult>"
            }
            xml += "</Results>"
        }
        return xml + "</NotificationOutcome>"
    }

    /// Reads the outcome XML.
    public init(xml text: String) throws(XMLParseError) {
        let root = try XMLNode(parsing: text)
        func int(_ name: String) -> Int { Int(root.child(name)?.text.trimmingCharactersInWhitespace() ?? "") ?? 0 }
        success = int("Success")
        failure = int("Failure")
        results = (root.child("Results")?.children("RegistrationResult") ?? []).map { node in
            func text(_ name: String) -> String { node.child(name)?.text.trimmingCharactersInWhitespace() ?? "" }
            return Result(
                applicationPlatform: text("ApplicationPlatform"), pnsHandle: text("PnsHandle"),
                registrationId: text("RegistrationId"), outcome: text("Outcome"))
        }
    }
}

/// Telemetry of one notification (`GET /{hub}/messages/{id}`, wire spec §7).
public struct NotificationDetails: Sendable, Hashable {
    public enum State: String, Sendable, Hashable, CaseIterable {
        case enqueued = "Enqueued"
        case processing = "Processing"
        case completed = "Completed"
        case noTargetFound = "NoTargetFound"
        case abandoned = "Abandoned"
        case scheduled = "Scheduled"
        /// Spelt as the .NET SDK's enum reads it; the service's documentation writes
        /// `Canceled`, which that enum would read as Unknown (wire spec §7). Both are read.
        case cancelled = "Cancelled"
        case unknown = "Unknown"

        /// A state as the service or the hub spells it, in any case.
        public init(wireValue: String) {
            let lower = wireValue.lowercased()
            self = lower == "canceled" ? .cancelled : (Self.allCases.first { $0.rawValue.lowercased() == lower } ?? .unknown)
        }
    }

    public var notificationId: String
    public var location: String
    public var state: State
    public var enqueueTime: String
    public var startTime: String?
    public var endTime: String?
    public var notificationBody: String
    public var tags: String?
    public var targetPlatforms: String
    /// Outcome counts by platform: name (`Success`, `InvalidNotificationSize`…) → count.
    public var outcomeCounts: [Platform: [String: Int]]
    /// Outcome counts of APNs deliveries.
    public var apnsOutcomeCounts: [String: Int] { outcomeCounts[.apns] ?? [:] }

    /// The platforms with counts, and their elements, in the order .NET reads them (a
    /// browser's last: .NET has no element for it and skips what it does not know).
    static let countElements: [(Platform, String)] = [
        (.apns, "ApnsOutcomeCounts"), (.mpns, "MpnsOutcomeCounts"), (.wns, "WnsOutcomeCounts"), (.gcm, "GcmOutcomeCounts"),
        (.adm, "AdmOutcomeCounts"), (.fcmV1, "FcmV1OutcomeCounts"), (.browser, "BrowserOutcomeCounts"),
    ]

    public init(
        notificationId: String, location: String, state: State, enqueueTime: String, startTime: String?, endTime: String?,
        notificationBody: String, tags: String?, targetPlatforms: String, outcomeCounts: [Platform: [String: Int]]
    ) {
        self.notificationId = notificationId
        self.location = location
        self.state = state
        self.enqueueTime = enqueueTime
        self.startTime = startTime
        self.endTime = endTime
        self.notificationBody = notificationBody
        self.tags = tags
        self.targetPlatforms = targetPlatforms
        self.outcomeCounts = outcomeCounts
    }

    /// The XML the service returns, elements in the order .NET parses them.
    public var xml: String {
        func element(_ name: String, _ value: String?) -> String {
            guard let value else { return "" }
            return "<\(name)>\(XMLNode.escape(value))</\(name)>"
        }
        var xml =
            "<NotificationDetails xmlns=\"\(Registration.servicebusNamespace)\" xmlns:i=\"\(Registration.instanceNamespace)\">"
        xml += element("NotificationId", notificationId) + element("Location", location) + element("State", state.rawValue)
        xml += element("EnqueueTime", enqueueTime) + element("StartTime", startTime) + element("EndTime", endTime)
        xml += "<NotificationBody>\(XMLNode.cdata(notificationBody))</NotificationBody>"
        xml += element("Tags", tags) + element("TargetPlatforms", targetPlatforms)
        for (platform, element) in Self.countElements {
            guard let counts = outcomeCounts[platform], !counts.isEmpty else { continue }
            xml += "<\(element)>"
            for (name, count) in counts.sorted(by: { $0.key < $1.key }) {
                xml += "<Outcome><Name>\(XMLNode.escape(name))</Name><Count>\(count)</Count></Outcome>"
            }
            xml += "</\(element)>"
        }
        return xml + "</NotificationDetails>"
    }

    /// Reads the details XML.
    public init(xml document: String) throws(XMLParseError) {
        let root = try XMLNode(parsing: document)
        func text(_ name: String) -> String? { root.child(name).map { $0.text.trimmingCharactersInWhitespace() } }
        notificationId = text("NotificationId") ?? ""
        location = text("Location") ?? ""
        state = State(wireValue: text("State") ?? "")
        enqueueTime = text("EnqueueTime") ?? ""
        startTime = text("StartTime")
        endTime = text("EndTime")
        notificationBody = root.child("NotificationBody")?.text ?? ""
        tags = text("Tags")
        targetPlatforms = text("TargetPlatforms") ?? ""
        var counts: [Platform: [String: Int]] = [:]
        for (platform, element) in Self.countElements {
            for outcome in root.child(element)?.children("Outcome") ?? [] {
                if let name = outcome.child("Name")?.text, let count = Int(outcome.child("Count")?.text ?? "") {
                    counts[platform, default: [:]][name] = count
                }
            }
        }
        outcomeCounts = counts
    }
}

/// The service's error body: `<Error><Code>401</Code><Detail>…</Detail></Error>`.
public struct ServiceErrorBody: Sendable, Hashable {
    public var code: Int
    public var detail: String

    public init(code: Int, detail: String) {
        self.code = code
        self.detail = detail
    }

    /// The XML body, the detail suffixed with the tracking id and time as the service does.
    /// The detail is one line: control characters (a refused value quoted in it may hold
    /// CR, LF or ESC) are written as `?`.
    public func xml(trackingId: String, timestamp: String) -> String {
        let line = String(
            String.UnicodeScalarView(detail.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : $0 }))
        return
            "<Error><Code>\(code)</Code><Detail>\(XMLNode.escape(line)).TrackingId:\(XMLNode.escape(trackingId)),TimeStamp:\(timestamp)</Detail></Error>"
    }

    /// Reads an error body; `nil` when it is not one.
    public init?(xml text: String) {
        guard let root = try? XMLNode(parsing: text), root.name == "Error" else { return nil }
        code = Int(root.child("Code")?.text.trimmingCharactersInWhitespace() ?? "") ?? 0
        detail = root.child("Detail")?.text.trimmingCharactersInWhitespace() ?? ""
    }
}
