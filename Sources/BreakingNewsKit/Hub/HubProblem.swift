import NotificationHubs

/// What a person is told when a hub call fails: the error once, on one line, and the fix —
/// the variable or flag to set — where there is one. The terminal UI and the commands say the
/// same.
public enum HubProblem {
    /// What the failed call was for.
    public enum Doing: Sendable, Hashable {
        case sending, subscribing, receiving, explaining, reading
    }

    /// The next step for `error` while `doing`, or nil when the error says it all.
    public static func fix(for error: HubError, doing: Doing, embedded: Bool) -> String? {
        if error.isUnreachable {
            return embedded
                ? "The local hub does not answer: 'breaking-news hub status' says why (in the UI, r tries again)."
                : "Check the connection string's Endpoint (BREAKING_NEWS_CONNECTION_STRING or --connection-string) and the network."
        }
        switch error.status {
        case 401 where doing == .sending || doing == .explaining:
            return "The hub refused the key: it may be wrong or rotated. " + fetchFullString
        case 401:
            return "The hub refused the key: it may be wrong or rotated. " + fetchListenString
        case 403 where !error.isRightsRefusal:
            return nil  // not the key: a full hub, whose detail says what to delete
        case 403 where doing == .sending || doing == .explaining:
            return
                "Sending needs a connection string with Send rights (explaining, with Manage): set BREAKING_NEWS_SEND_CONNECTION_STRING (or --send-connection-string) to one, such as the hub's DefaultFullSharedAccessSignature."
        case 403:
            return
                "The key lacks the rights for this: a Listen key registers and receives; check BREAKING_NEWS_CONNECTION_STRING (or --connection-string)."
        case 404 where error.isHubNotFound:
            return "No hub of that name: check BREAKING_NEWS_HUB (or --hub, or EntityPath in the connection string)."
        case 429, 503:
            return error.retryAfter.map { "The hub is busy: try again in \(Int($0.rounded(.up))) s." }
                ?? "The hub is busy: try again in a moment."
        default:
            return nil
        }
    }

    /// What a home whose Listen key was refused does: fetch the string signed with the key
    /// the hub serves now, from the command that prints it.
    public static let fetchListenString =
        "Fetch the current Listen connection string ('breaking-news hub connection-strings' prints it on the hub's machine; on Azure, the hub's Access Policies) and set BREAKING_NEWS_CONNECTION_STRING (or --connection-string) to it."

    /// The same for a send's key: the Full string.
    public static let fetchFullString =
        "Fetch the current Full connection string ('breaking-news hub connection-strings' prints it on the hub's machine; on Azure, the hub's Access Policies) and set BREAKING_NEWS_SEND_CONNECTION_STRING (or --send-connection-string) to it."

    /// The error and its fix, one line.
    public static func line(_ error: HubError, doing: Doing, embedded: Bool) -> String {
        [error.readable, fix(for: error, doing: doing, embedded: embedded)].compactMap { $0 }.joined(separator: ". ")
    }
}

extension HubError {
    /// True when the hub refused the key (401) or its rights (a 403 that says so: by the
    /// local hub's code, by Azure's text that a claim is required where no code came); a full
    /// hub also answers 403, and that is not the key's fault.
    public var isRightsRefusal: Bool {
        guard status != 401 else { return true }
        guard status == 403 else { return false }
        if let refusal { return refusal == .rightsRefused }
        return detail.lowercased().contains("claim is required")
    }

    /// True for the 404 of a hub that does not exist: by the local hub's code, by Azure's text
    /// where no code came.
    public var isHubNotFound: Bool {
        guard status == 404 else { return false }
        if let refusal { return refusal == .hubNotFound }
        return detail.contains("could not be found")
    }

    /// The service's detail without the `.TrackingId:…,TimeStamp:…` the service appends to
    /// it (the tracking id is said once, apart).
    public var readableDetail: String {
        guard let range = detail.range(of: ".TrackingId:") ?? detail.range(of: "TrackingId:") else { return detail }
        return String(detail[..<range.lowerBound])
    }

    /// The service's tracking id for the failed request: its header's, or the one in the detail.
    public var readableTrackingId: String? {
        if let trackingId { return trackingId }
        guard let range = detail.range(of: "TrackingId:") else { return nil }
        let id = detail[range.upperBound...].prefix { $0 != "," && $0 != " " }
        return id.isEmpty ? nil : String(id)
    }

    /// The error on one line, its tracking id said once: `the hub answered 403: Send claim
    /// is required … grants Listen (TrackingId 5e3…)`.
    public var readable: String {
        let tracking = readableTrackingId.map { " (TrackingId \($0))" } ?? ""
        let text: String
        switch status {
        case let status?: text = "the hub answered \(status): \(readableDetail)\(tracking)"
        case nil: text = description
        }
        return TerminalText.line(text)
    }
}
