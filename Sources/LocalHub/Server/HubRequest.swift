import Foundation
import HTTPTypes
import Hummingbird
import NotificationHubs

/// A request as the hub reads it: path segments and query keys compared ignoring case,
/// trailing slashes ignored, header names in any case.
struct HubRequest {
    let request: Request
    /// Path segments, percent-decoded, empty ones dropped.
    let segments: [String]
    /// Lower-cased segments, for matching routes.
    let lowered: [String]
    /// The raw path, as signed by clients.
    let rawPath: String
    /// Query parameters with lower-cased names; a bare flag (`&test`) has an empty value.
    let query: [String: String]
    let trackingId: String

    init(_ request: Request) {
        self.request = request
        let path = request.uri.path
        rawPath = path
        segments = path.split(separator: "/", omittingEmptySubsequences: true).map {
            PercentEncoding.decode(String($0)) ?? String($0)
        }
        lowered = segments.map { $0.lowercased() }
        var query: [String: String] = [:]
        for pair in (request.uri.query ?? "").split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = (PercentEncoding.decode(String(parts[0])) ?? String(parts[0])).lowercased()
            let raw = parts.count > 1 ? String(parts[1]).replacingOccurrences(of: "+", with: " ") : ""
            query[name] = PercentEncoding.decode(raw) ?? raw
        }
        self.query = query
        trackingId = request.headers[HTTPField.Name("TrackingId")!] ?? UUID().uuidString.lowercased()
    }

    var method: HTTPRequest.Method { request.method }

    func header(_ name: String) -> String? {
        guard let field = HTTPField.Name(name) else { return nil }
        return request.headers[field]
    }

    /// The host the client addressed (for token audiences and `Location`), port included.
    var authority: String { request.head.authority ?? header("Host") ?? "localhost" }

    /// A query flag such as `test` or `direct`: present bare or with any value but `false`.
    func flag(_ name: String) -> Bool {
        guard let value = query[name] else { return false }
        return value.lowercased() != "false"
    }

    var apiVersion: String? { query["api-version"] }

    var contentType: String? { header("Content-Type")?.lowercased() }
}

/// An answer in the service's style: XML error bodies with a tracking id.
enum HubReply {
    static func error(_ status: HTTPResponse.Status, _ detail: String, trackingId: String, headers: HTTPFields = [:]) -> Response
    {
        let body = ServiceErrorBody(code: Int(status.code), detail: detail).xml(trackingId: trackingId, timestamp: timestamp())
        var fields = headers
        fields[.contentType] = "application/xml; charset=utf-8"
        fields[HTTPField.Name("TrackingId")!] = trackingId
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    static func empty(_ status: HTTPResponse.Status, trackingId: String, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[HTTPField.Name("TrackingId")!] = trackingId
        fields[.contentLength] = "0"
        return Response(status: status, headers: fields)
    }

    static func body(
        _ status: HTTPResponse.Status, _ text: String, contentType: String, trackingId: String, headers: HTTPFields = [:]
    ) -> Response {
        var fields = headers
        fields[.contentType] = contentType
        fields[HTTPField.Name("TrackingId")!] = trackingId
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "M/d/yyyy h:mm:ss a"
        return formatter.string(from: Date())
    }
}

/// A request the hub refuses, answered with the service's XML error.
struct HubRefusal: Error {
    let status: HTTPResponse.Status
    let detail: String
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ detail: String) {
        self.status = status
        self.detail = detail
    }

    static func badRequest(_ detail: String) -> HubRefusal { HubRefusal(.badRequest, detail) }
}
