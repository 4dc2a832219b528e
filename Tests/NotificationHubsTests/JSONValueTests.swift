import Foundation
import NotificationHubs
import PropertyBased
import Testing

struct JSONValueTests {
    @Test func keepsOrderAndNumberText() throws {
        let text = #"{"b":1.50,"a":[true,false,null,-0,2e10],"c":{"d":"\u00e9\n\ud83d\ude00"}}"#
        let value = try JSONValue(parsing: text)
        #expect(value.text == #"{"b":1.50,"a":[true,false,null,-0,2e10],"c":{"d":"é\n😀"}}"#)
        #expect(value["c"]?["d"]?.stringValue == "é\n😀")
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":}", "01", "1.", "-", "\"\\x\"", "\"a", "tru", "[1] 2", "{\"a\" 1}", "\"\u{1}\"",
        String(repeating: "[", count: 200) + String(repeating: "]", count: 200),
    ])
    func rejectsMalformedText(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: [0x22, 0xFF, 0x22]) }
    }

    @Test func loneSurrogatesBecomeReplacementCharacters() throws {
        #expect(try JSONValue(parsing: #""\ud800x""#).stringValue == "\u{FFFD}x")
    }

    @Test func stringsRoundTripThroughFoundation() async {
        let scalar = Gen.oneOf(
            Gen.unicodeScalar(in: "\u{0}"..."\u{7F}").eraseToAnySequence(),
            Gen.unicodeScalar(in: "\u{80}"..."\u{D7FF}").eraseToAnySequence(),
            Gen.unicodeScalar(in: "\u{10000}"..."\u{1FAFF}").eraseToAnySequence())
        await propertyCheck(count: 300, input: scalar.array(of: 0...30)) { scalars in
            var s = ""
            s.unicodeScalars.append(contentsOf: scalars)
            let text = JSONValue.quoted(s)
            let decoded = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as? String
            #expect(decoded == s)
            #expect((try? JSONValue(parsing: text))?.stringValue == s)
        }
    }
}
