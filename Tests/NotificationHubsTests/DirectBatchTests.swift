import Foundation
import NotificationHubs
import PropertyBased
import Testing

/// The direct batch body (wire spec §6.3): what the client writes the hub reads, in both
/// SDKs' shapes, and what is not a batch is refused with a reason.
struct DirectBatchTests {
    static func parse(_ body: String, _ contentType: String) throws(DirectBatchError) -> DirectBatch {
        try DirectBatch(parsing: Array(body.utf8), contentType: contentType)
    }

    @Test func whatTheClientWritesReadsBack() async {
        let scalar = Gen.oneOf(
            Gen.unicodeScalar(in: " "..."\u{7E}").eraseToAnySequence(),
            Gen.unicodeScalar(in: "\u{A0}"..."\u{D7FF}").eraseToAnySequence(),
            Gen.unicodeScalar(in: "\u{0A}"..."\u{0D}").eraseToAnySequence())
        let text = scalar.array(of: 0...40).map { scalars -> String in
            var s = ""
            s.unicodeScalars.append(contentsOf: scalars)
            return s
        }
        await propertyCheck(count: 300, input: text, text.array(of: 1...5)) { alert, handles in
            let payload = JSONValue.object([("aps", .object([("alert", .string(alert))]))]).text
            let devices = handles.map { "h" + $0 }
            let (contentType, body) = DirectBatch(payload: payload, devices: devices).multipart()
            let read = try? Self.parse(body, contentType)
            #expect(read == DirectBatch(payload: payload, devices: devices))
        }
    }

    @Test func theJSSDKsShapeIsRead() throws {
        // Spaces around '=', a quoted boundary, LF lines, and the service's single-quoted example.
        let body =
            "--nh-boundary-1\nContent-Type: application/json\nContent-Disposition: inline; name=notification\n\n"
            + #"{"aps":{"alert":"hi"}}"# + "\n--nh-boundary-1\nContent-Disposition: inline; name=\"devices\"\n\n"
            + "['ab12', 'cd34']\n--nh-boundary-1--"
        let batch = try Self.parse(body, #"multipart/mixed; boundary = "nh-boundary-1""#)
        #expect(batch == DirectBatch(payload: #"{"aps":{"alert":"hi"}}"#, devices: ["ab12", "cd34"]))
    }

    @Test func aPayloadThatHoldsBoundaryLikeTextInsideALineIsKept() throws {
        let payload = #"{"aps":{"alert":"a --b inside"}}"#
        let (contentType, body) = DirectBatch(payload: payload, devices: ["ab"]).multipart(boundary: "b")
        #expect(try Self.parse(body, contentType).payload == payload)
    }

    @Test(arguments: [
        ("text/plain", "--b\r\n\r\n--b--", "multipart/mixed"),
        ("multipart/mixed", "--b\r\n\r\n--b--", "boundary"),
        ("multipart/mixed; boundary=b", "--b\r\nContent-Disposition: inline; name=notification\r\n\r\n{}\r\n", "not closed"),
        ("multipart/mixed; boundary=b", "--b\r\nContent-Disposition: inline; name=notification\r\n\r\n{}\r\n--b--", "devices"),
        (
            "multipart/mixed; boundary=b", "--b\r\nContent-Disposition: inline; name=devices\r\n\r\n[\"a\"]\r\n--b--",
            "notification"
        ),
        ("multipart/mixed; boundary=b", "--b\r\nContent-Disposition: inline; name=devices\r\n\r\n[1]\r\n--b--", "handle"),
        ("multipart/mixed; boundary=b", "--b\r\nContent-Disposition: inline; name=other\r\n\r\nx\r\n--b--", "other"),
        ("multipart/mixed; boundary=b", "--b\r\nno colon here\r\n\r\nx\r\n--b--", "headers"),
        ("multipart/mixed; boundary=b", "--b\r\nContent-Disposition: inline; name=devices\r\n--b--", "blank line"),
        ("multipart/mixed; boundary=b", String(repeating: "--b\n\n", count: 10_000) + "--b--", "more than two parts"),
    ])
    func whatIsNotABatchIsRefusedWithItsReason(contentType: String, body: String, reason: String) {
        #expect(throws: DirectBatchError.self) { try Self.parse(body, contentType) }
        do {
            _ = try Self.parse(body, contentType)
        } catch {
            #expect(error.description.contains(reason), "\(error)")
        }
    }

    @Test func atMostAThousandDevices() throws {
        let allowed = DirectBatch(payload: "{}", devices: (0..<1000).map { "d\($0)" }).multipart()
        #expect(try Self.parse(allowed.body, allowed.contentType).devices.count == 1000)
        let tooMany = DirectBatch(payload: "{}", devices: (0..<1001).map { "d\($0)" }).multipart()
        #expect(throws: DirectBatchError.self) { try Self.parse(tooMany.body, tooMany.contentType) }
    }
}
