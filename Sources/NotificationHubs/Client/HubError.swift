/// A failed hub call: the HTTP status (none when the hub could not be reached), the service's
/// detail text and tracking id.
public struct HubError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: Sendable, Equatable {
        case status(Int)
        case unreachable
        case timedOut
        case invalidResponse
    }

    let code: Code
    /// The service's explanation, from the `<Detail>` of its error body when it sent one.
    public let detail: String
    /// The service's `TrackingId` for the failed request, when it sent one.
    public let trackingId: String?
    /// Seconds the service asked to wait (`Retry-After`).
    public let retryAfter: Double?
    /// Why the local hub refused, as it says to programs (`HubRefusalCode.header`); nil from
    /// Azure, which says it only in `detail`.
    public let refusal: HubRefusalCode?

    init(
        _ code: Code, detail: String, trackingId: String? = nil, retryAfter: Double? = nil, refusal: HubRefusalCode? = nil
    ) {
        self.code = code
        self.detail = detail
        self.trackingId = trackingId
        self.retryAfter = retryAfter
        self.refusal = refusal
    }

    /// An error the caller decided on, for a status the hub answered.
    public static func status(
        _ status: Int, detail: String, trackingId: String? = nil, retryAfter: Double? = nil, refusal: HubRefusalCode? = nil
    ) -> HubError {
        HubError(.status(status), detail: detail, trackingId: trackingId, retryAfter: retryAfter, refusal: refusal)
    }

    /// An error answer as it came: its status, the `<Detail>` of its body (else `fallback`),
    /// and the headers that say more (`TrackingId`, `Retry-After`, `X-Hub-Refusal`).
    static func answered(_ status: Int, body: String, fallback: String, header: (String) -> String?) -> HubError {
        HubError(
            .status(status), detail: ServiceErrorBody(xml: body)?.detail ?? fallback, trackingId: header("TrackingId"),
            retryAfter: header("Retry-After").flatMap(Double.init),
            refusal: header(HubRefusalCode.header).flatMap(HubRefusalCode.init(rawValue:)))
    }

    /// The hub could not be reached (connection refused, DNS, TLS).
    public static func unreachable(_ detail: String) -> HubError { HubError(.unreachable, detail: detail) }

    /// The HTTP status the hub answered with, `nil` when it never answered.
    public var status: Int? {
        if case .status(let s) = code { return s }
        return nil
    }

    /// True when no answer came: refused connection, unknown host, TLS failure or timeout.
    public var isUnreachable: Bool { code == .unreachable || code == .timedOut }
    /// True for 401 and 403: the token or its rights were refused.
    public var isAuthorizationFailure: Bool { status == 401 || status == 403 }
    /// True for 404.
    public var isNotFound: Bool { status == 404 }
    /// True for the 404 of a device the hub does not know: by its code from the local hub;
    /// by its text only where no code came (Azure's shape).
    public var isDeviceNotRegistered: Bool {
        guard status == 404 else { return false }
        if let refusal { return refusal == .deviceNotRegistered }
        return detail.lowercased().contains("not registered")
    }
    /// True when a retry may succeed: 408, 429 and 5xx.
    public var isTransient: Bool {
        guard let status else { return false }
        return status == 408 || status == 429 || status >= 500
    }

    public var description: String {
        let tracking = trackingId.map { " (TrackingId \($0))" } ?? ""
        switch code {
        case .status(let status): return "the hub answered \(status): \(detail)\(tracking)"
        case .unreachable: return "the hub could not be reached: \(detail)"
        case .timedOut: return "the hub did not answer in time: \(detail)"
        case .invalidResponse: return "the hub's answer could not be read: \(detail)\(tracking)"
        }
    }
}
