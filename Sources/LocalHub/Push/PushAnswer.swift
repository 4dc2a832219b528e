/// What a real push service (APNs, FCM v1, a Web Push service) answered for one message.
public enum PushAnswer: Sendable, Equatable {
    /// Accepted; `id` is the service's id for the message when it gave one (`apns-id`, FCM's
    /// message name, a Web Push `Location`).
    case delivered(id: String?)
    /// Refused with `status` and the service's reason (APNs `Unregistered`, FCM
    /// `UNREGISTERED`…), printable ASCII only; the HTTP status text when it gave none.
    case refused(status: Int, reason: String)
    /// No answer: the connection could not be made or broke, or the service kept failing.
    case unreachable(String)
}
