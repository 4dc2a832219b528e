import Foundation
import HTTPTypes
import Hummingbird

/// A request the hub refuses, answered with the service's XML error.
struct HubRefusal: HTTPResponseError {
    let status: HTTPResponse.Status
    let detail: String
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ detail: String) {
        self.status = status
        self.detail = detail
    }

    static func badRequest(_ detail: String) -> HubRefusal { HubRefusal(.badRequest, detail) }

    /// 429: the client asked for more than it may now; it may try again in `retryAfter` seconds.
    static func tooManyRequests(_ detail: String, retryAfter seconds: Double) -> HubRefusal {
        let wait = max(1, Int(seconds.rounded(.up)))
        var refusal = HubRefusal(.tooManyRequests, "\(detail); try again in \(wait) s")
        refusal.headers[.retryAfter] = String(wait)
        return refusal
    }

    /// The one answer to each reason the engine refuses a write.
    init(_ refusal: WriteRefusal) {
        switch refusal.reason {
        case .notFound: self.init(.notFound, refusal.detail)
        case .preconditionFailed: self.init(.preconditionFailed, refusal.detail)
        case .invalid: self.init(.badRequest, refusal.detail)
        case .conflict: self.init(.conflict, refusal.detail)
        case .quotaExceeded: self.init(.forbidden, refusal.detail)
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
