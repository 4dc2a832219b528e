/// Why the local hub refused a request, in a form a program matches on: the value of the
/// `X-Hub-Refusal` header of its error answers. Azure's clients ignore a header they do not
/// know, and Azure sends none: where it is missing, only the service's status and `<Detail>`
/// text say why (`HubError.refusal` is nil). The text is for people and may change; the code
/// does not.
public enum HubRefusalCode: String, Sendable, Hashable, CaseIterable {
    /// The device token is neither claimed for the built-in push service nor the handle of an
    /// installation or registration (or was asked about without its claim's secret).
    case deviceNotRegistered = "DeviceNotRegistered"
    /// No hub of that name is served.
    case hubNotFound = "HubNotFound"
    /// The key's rule lacks the rights the request needs (a claim of Listen, Send or Manage).
    case rightsRefused = "RightsRefused"
    /// A release of a token that is not claimed.
    case notClaimed = "NotClaimed"
    /// What the request names does not exist.
    case notFound = "NotFound"
    /// An `If-Match` that does not match.
    case preconditionFailed = "PreconditionFailed"
    /// The request is not valid.
    case invalid = "Invalid"
    /// The change met another change of the same record.
    case conflict = "Conflict"
    /// The hub is at one of its limits.
    case quotaExceeded = "QuotaExceeded"
    /// The client asked for more than it may now (429, with `Retry-After`).
    case throttled = "Throttled"

    /// The response header that carries the code.
    public static let header = "X-Hub-Refusal"
}
