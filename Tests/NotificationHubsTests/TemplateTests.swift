import Foundation
import NotificationHubs
import PropertyBased
import Testing

struct TemplateTests {
    func render(_ body: String, _ properties: [String: String]) throws -> String {
        String(decoding: try Template(body: body).render(TemplateProperties(properties)), as: UTF8.self)
    }

    @Test func tutorialTemplateRendersTheMessage() throws {
        let out = try render(##"{"aps":{"alert":"$(messageParam)"}}"##, ["messageParam": "Breaking World News : hello"])
        #expect(out == ##"{"aps":{"alert":"Breaking World News : hello"}}"##)
    }

    @Test func propertyNamesAreCaseInsensitive() throws {
        #expect(try render(##"{"a":"$(MESSAGE)"}"##, ["message": "x"]) == ##"{"a":"x"}"##)
    }

    @Test func missingPropertyIsEmpty() throws {
        #expect(try render(##"{"a":"$(nothing)","b":"#(nothing)"}"##, [:]) == ##"{"a":"","b":""}"##)
    }

    @Test func clipToLength() throws {
        #expect(try render(##"{"a":"$(p, 5)"}"##, ["p": "Breaking"]) == ##"{"a":"Break"}"##)
        #expect(try render(##"{"a":"$(p,20)"}"##, ["p": "short"]) == ##"{"a":"short"}"##)
    }

    @Test func ellipsisClipsSoTheWholeFits() throws {
        // The documented example.
        #expect(try render(##"{"t":".(title, 20)"}"##, ["title": "This is the title line"]) == ##"{"t":"This is the title..."}"##)
        #expect(try render(##"{"t":".(title, 20)"}"##, ["title": "Short title"]) == ##"{"t":"Short title"}"##)
    }

    @Test func uriEncodes() throws {
        #expect(try render(##"{"u":"%(q)"}"##, ["q": "a b&c/é"]) == ##"{"u":"a%20b%26c%2F%C3%A9"}"##)
    }

    @Test func numberFormEmitsABareNumber() throws {
        #expect(try render(##"{"aps":{"badge":"#(n)"}}"##, ["n": "40"]) == ##"{"aps":{"badge":40}}"##)
        #expect(try render(##"{"b":"#(n)"}"##, ["n": "1.5e+3"]) == ##"{"b":1.5e+3}"##)
        #expect(try render(##"{"b":"#(n)"}"##, ["n": "007"]) == ##"{"b":"007"}"##)
        #expect(try render(##"{"b":"#(n)"}"##, ["n": "-1"]) == ##"{"b":"-1"}"##)
        #expect(try render(##"{"b":"#(n)"}"##, ["n": "forty"]) == ##"{"b":"forty"}"##)
    }

    @Test func concatenationWithLiterals() throws {
        #expect(
            try render(##"{"a":"{'Breaking ' + $(cat) + ' News : ' + $(text)}"}"##, ["cat": "World", "text": "hi"])
                == ##"{"a":"Breaking World News : hi"}"##)
        #expect(try render(##"{"a":"{'It''s ' + $(who)}"}"##, ["who": "me"]) == ##"{"a":"It's me"}"##)
        #expect(try render(##"{"a":"{\"say \"\"\" + $(w) + \"\"\"\"}"}"##, ["w": "hi"]) == ##"{"a":"say \"hi\""}"##)
        #expect(try render(##"{"a":"{.(t, 6) + %(u)}"}"##, ["t": "abcdefgh", "u": "x y"]) == ##"{"a":"abc...x%20y"}"##)
    }

    @Test func expressionsOnlyAsWholeStringValues() throws {
        // Inside other text, or as a key, an expression is literal text.
        #expect(try render(##"{"a":"Some text $(message)"}"##, ["message": "x"]) == ##"{"a":"Some text $(message)"}"##)
        #expect(try render(##"{"$(k)":"v"}"##, ["k": "x"]) == ##"{"$(k)":"v"}"##)
        #expect(
            try render(##"{"a":["$(x)",1,true,null,{"b":"$(y)"}]}"##, ["x": "1", "y": "2"])
                == ##"{"a":["1",1,true,null,{"b":"2"}]}"##)
    }

    @Test func substitutedTextIsEscaped() throws {
        let out = try render(##"{"a":"$(p)"}"##, ["p": "say \"hi\"\\\n\t\u{1}"])
        #expect(out == ##"{"a":"say \"hi\"\\\n\t\u0001"}"##)
    }

    @Test(arguments: [
        ##"{"a":"{$(x) + #(y)}"}"##,
        ##"{"a":".(p)"}"##,
        ##"{"a":"%(p, 3)"}"##,
        ##"{"a":"#(p, 3)"}"##,
        ##"{"a":"$(p, 'x')"}"##,
        ##"{"a":"$(p-q)"}"##,
        ##"{"a":"{'open + $(p)}"}"##,
        ##"{"a":"{$(p) $(q)}"}"##,
        ##"{"a":"$(p, 0)"}"##,
        ##"{"a":"{}"}"##,
        ##"{"a":"$()"}"##,
        ##"not json"##,
        ##"{"a":"$(p)"} trailing"##,
    ])
    func invalidTemplatesAreRefused(body: String) {
        #expect(throws: TemplateError.self) { try Template(body: body) }
    }

    @Test func renderStringHandlesExpiryExpressions() throws {
        let properties = TemplateProperties(["when": "2030-01-01T00:00:00Z"])
        #expect(try Template.renderString("$(when)", properties) == "2030-01-01T00:00:00Z")
        #expect(try Template.renderString("2031-01-01", properties) == "2031-01-01")
    }

    @Test func templatePropertiesFromJSON() throws {
        let properties = try TemplateProperties(json: JSONValue(parsing: ##"{"a":"x","n":5,"b":true,"z":null}"##))
        #expect(properties["A"] == "x")
        #expect(properties["n"] == "5")
        #expect(properties["b"] == "true")
        #expect(properties["z"] == "")
        #expect(throws: TemplateError.self) { try TemplateProperties(json: JSONValue(parsing: ##"{"a":{"b":1}}"##)) }
        #expect(throws: TemplateError.self) { try TemplateProperties(json: JSONValue(parsing: ##"["a"]"##)) }
    }

    // MARK: Property: every rendering is valid JSON.

    static let nasty = Gen.oneOf(
        Gen.element(of: Array("\"\\/'{}$()#.%+,\u{0}\u{1}\u{8}\u{C}\n\r\t\u{1F}\u{7F}\u{2028}\u{2029}")).map { $0 ?? "a" }
            .eraseToAnySequence(),
        Gen.character(in: "a"..."z").map { $0 }.eraseToAnySequence(),
        Gen.element(of: Array("😀🇫🇷👩‍👩‍👧é日本語\u{301}")).map { $0 ?? "b" }.eraseToAnySequence()
    )

    static let templates = [
        ##"{"aps":{"alert":"$(messageParam)"}}"##,
        ##"{"aps":{"alert":{"title":".(a, 12)","body":"$(b, 7)"},"badge":"#(n)"},"u":"%(c)"}"##,
        ##"{"x":["{'lit''eral ' + $(a) + \"q\"\"\" + .(b, 5)}", "#(a)", "$(missing)"]}"##,
    ]

    @Test func everyRenderingIsValidJSON() async throws {
        let compiled = try Self.templates.map { try Template(body: $0) }
        let value = Self.nasty.array(of: 0...40).map { String($0) }
        await propertyCheck(count: 400, input: value, value, value, value) { a, b, c, n in
            let properties = TemplateProperties(["messageParam": a, "a": a, "b": b, "c": c, "n": n])
            for template in compiled {
                let bytes = template.render(properties)
                let parsed = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
                #expect(parsed != nil, "invalid JSON: \(String(decoding: bytes, as: UTF8.self))")
            }
            // The plain form carries the value unchanged.
            let first =
                try? JSONSerialization.jsonObject(with: Data(compiled[0].render(properties))) as? [String: [String: String]]
            #expect(first?["aps"]?["alert"] == a)
        }
    }
}
