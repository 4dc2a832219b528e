import Foundation
import HTTPTypes
import Hummingbird
import NotificationHubs

/// A request the hub refuses, answered with the service's XML error, and, for programs, the
/// reason as a code in a header Azure's clients ignore (`HubRefusalCode`): clients match on
/// the code, never on `detail`, which is for people.
struct HubRefusal: HTTPResponseError {
    let status: HTTPResponse.Status
    let detail: String
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ detail: String, code: HubRefusalCode? = nil) {
        self.status = status
        self.detail = detail
        if let code { headers[Self.codeField] = code.rawValue }
    }

    /// The header of the code (`HubRefusalCode.header`).
    static let codeField = HTTPField.Name(HubRefusalCode.header)!

    /// The code the refusal carries, if any.
    var code: HubRefusalCode? { headers[Self.codeField].flatMap(HubRefusalCode.init(rawValue:)) }

    static func badRequest(_ detail: String) -> HubRefusal { HubRefusal(.badRequest, detail) }

    /// 429: the client asked for more than it may now; it may try again in `retryAfter` seconds.
    static func tooManyRequests(_ detail: String, retryAfter seconds: Double) -> HubRefusal {
        let wait = max(1, Int(seconds.rounded(.up)))
        var refusal = HubRefusal(.tooManyRequests, "\(detail); try again in \(wait) s", code: .throttled)
        refusal.headers[.retryAfter] = String(wait)
        return refusal
    }

    /// The one answer to each reason the engine refuses a write.
    init(_ refusal: WriteRefusal) {
        switch refusal.reason {
        case .notFound: self.init(.notFound, refusal.detail, code: .notFound)
        case .preconditionFailed: self.init(.preconditionFailed, refusal.detail, code: .preconditionFailed)
        case .invalid: self.init(.badRequest, refusal.detail, code: .invalid)
        case .conflict: self.init(.conflict, refusal.detail, code: .conflict)
        case .quotaExceeded: self.init(.forbidden, refusal.detail, code: .quotaExceeded)
        }
    }
}

extension HubRefusal {
    /// The service's XML error body, with the request's tracking id (a new one when the
    /// request has none yet).
    func response(from request: Request, context: some RequestContext) -> Response {
        let known = (context as? HubRequestContext)?.trackingId ?? ""
        return HubReply.error(status, detail, trackingId: known.isEmpty ? HubRequest.newTrackingId() : known, headers: headers)
    }
}
