import Foundation
import NotificationHubs
import PropertyBased
import Testing

/// The stream's parser sees TCP chunks split anywhere: inside a UTF-8 character, between CR
/// and LF, in a field name. Whatever the split, the events are the same.
struct ServerSentEventParserTests {
    static func delivery(_ seq: Int64, text: String) -> BuiltInPushDelivery {
        BuiltInPushDelivery(
            seq: seq, notificationId: "n\(seq)", hub: "news", device: "ab12", template: "t", tags: "World",
            deliveredAt: "2027-01-15T08:00:00Z", payload: .object([("aps", .object([("alert", .string(text))]))]),
            epoch: "e1")
    }

    static func events(_ bytes: [UInt8], chunks sizes: [Int]) throws -> [ServerSentEvent] {
        var parser = ServerSentEventParser()
        var events: [ServerSentEvent] = []
        var rest = bytes[...]
        var index = 0
        while !rest.isEmpty {
            let size = sizes.isEmpty ? rest.count : max(1, sizes[index % sizes.count])
            index += 1
            events += try parser.feed(rest.prefix(size))
            rest = rest.dropFirst(size)
        }
        return events
    }

    @Test func oneByteAtATimeGivesTheSameEventsAsOneChunk() throws {
        let frames =
            "retry: 1000\n: connected\n\n"
            + [Self.delivery(1, text: "héllo 🗳️"), Self.delivery(2, text: "a\nb"), Self.delivery(3, text: "")]
            .map(\.serverSentEvent).joined()
        let crlf = frames.replacingOccurrences(of: "\n", with: "\r\n")
        for text in [frames, crlf] {
            let bytes = Array(text.utf8)
            let whole = try Self.events(bytes, chunks: [])
            #expect(whole.count == 3)
            #expect(try Self.events(bytes, chunks: [1]) == whole)
            let deliveries = try whole.map { try BuiltInPushDelivery(json: JSONValue(parsing: $0.data)) }
            #expect(deliveries.map(\.alertText) == ["héllo 🗳️", "a\nb", ""])
            #expect(whole.map(\.id) == ["1", "2", "3"])
        }
    }

    @Test func anySplitGivesTheSameEvents() async {
        let text = Gen.oneOf(
            Gen.unicodeScalar(in: " "..."~").eraseToAnySequence(),
            Gen.unicodeScalar(in: "\u{A0}"..."\u{D7FF}").eraseToAnySequence(),
            Gen.unicodeScalar(in: "\u{1F300}"..."\u{1FAFF}").eraseToAnySequence(),
            Gen.always(Unicode.Scalar("\n")).eraseToAnySequence())
        await propertyCheck(count: 200, input: text.array(of: 0...40).array(of: 1...5), Gen.int(in: 1...17).array(of: 1...8)) {
            texts, sizes in
            let deliveries = texts.enumerated().map { index, scalars in
                var s = ""
                s.unicodeScalars.append(contentsOf: scalars)
                return Self.delivery(Int64(index + 1), text: s)
            }
            let bytes = Array(deliveries.map(\.serverSentEvent).joined().utf8)
            let whole = try? Self.events(bytes, chunks: [])
            let split = try? Self.events(bytes, chunks: sizes)
            #expect(whole != nil && whole == split)
            #expect(whole?.compactMap { try? BuiltInPushDelivery(json: JSONValue(parsing: $0.data)) } == deliveries)
        }
    }
}
