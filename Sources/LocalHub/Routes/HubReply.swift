import Foundation
import HTTPTypes
import Hummingbird
import NotificationHubs
import Synchronization

/// An answer in the service's style: XML error bodies with a tracking id.
enum HubReply {
    static func error(_ status: HTTPResponse.Status, _ detail: String, trackingId: String, headers: HTTPFields = [:]) -> Response
    {
        let body = ServiceErrorBody(code: Int(status.code), detail: detail).xml(trackingId: trackingId, timestamp: timestamp())
        var fields = headers
        fields[.contentType] = "application/xml; charset=utf-8"
        fields[HubRequest.trackingIdField] = trackingId
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    static func empty(_ status: HTTPResponse.Status, trackingId: String, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[HubRequest.trackingIdField] = trackingId
        fields[.contentLength] = "0"
        return Response(status: status, headers: fields)
    }

    static func body(
        _ status: HTTPResponse.Status, _ text: String, contentType: String, trackingId: String, headers: HTTPFields = [:]
    ) -> Response {
        var fields = headers
        fields[.contentType] = contentType
        fields[HubRequest.trackingIdField] = trackingId
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// The service's error time stamp, `M/d/yyyy h:mm:ss AM` in UTC.
    static func timestamp(_ date: Date = Date()) -> String {
        // W3CDate gives yyyy-MM-ddTHH:mm:ss…; rearrange it.
        let w3c = Array(W3CDate.format(date).utf8)
        func number(_ range: Range<Int>) -> Int { Int(String(decoding: w3c[range], as: UTF8.self)) ?? 0 }
        let hour = number(11..<13)
        let twelve = hour % 12 == 0 ? 12 : hour % 12
        let minutes = String(decoding: w3c[14..<19], as: UTF8.self)
        return "\(number(5..<7))/\(number(8..<10))/\(number(0..<4)) \(twelve):\(minutes) \(hour < 12 ? "AM" : "PM")"
    }
}
