import NotificationHubs
import PropertyBased
import Testing

struct TagExpressionTests {
    @Test func precedenceIsNotOverAndOverOr() throws {
        let e = try TagExpression(parsing: "a || b && !c")
        #expect(e == .or([.tag("a"), .and([.tag("b"), .not(.tag("c"))])]))
        #expect(e.description == "a||b&&!c")
        #expect(try TagExpression(parsing: "(a||b)&&c") == .and([.or([.tag("a"), .tag("b")]), .tag("c")]))
        #expect(try TagExpression(parsing: "!!a") == .not(.not(.tag("a"))))
    }

    @Test func evaluatesAgainstATagSet() throws {
        let e = try TagExpression(parsing: "(World || Sports) && !Politics")
        #expect(e.matches(["World"]))
        #expect(e.matches(["Sports", "Science"]))
        #expect(!e.matches(["World", "Politics"]))
        #expect(!e.matches([]))
    }

    @Test func systemTagsParse() throws {
        let e = try TagExpression(parsing: "$InstallationId:{abc-123} || $userid:{me@x.com}")
        #expect(e.tags == ["$InstallationId:{abc-123}", "$UserId:{me@x.com}"])
    }

    @Test func tagCharsetIsTheDocumentedOne() throws {
        #expect(try TagExpression(parsing: "a_b@c#d.e:f-G9") == .tag("a_b@c#d.e:f-G9"))
    }

    @Test func twentyOrTagsAreAllowedAndTwentyOneAreNot() throws {
        let twenty = (1...20).map { "t\($0)" }.joined(separator: "||")
        #expect(try TagExpression(parsing: twenty).tags.count == 20)
        let error = try #require(throws: TagExpressionError.self) { try TagExpression(parsing: twenty + "||t21") }
        #expect(error.description.contains("21 tags"))
    }

    @Test func sixTagsWithAndAreAllowedAndSevenAreNot() throws {
        let six = (1...6).map { "t\($0)" }.joined(separator: " && ")
        _ = try TagExpression(parsing: six)
        let error = try #require(throws: TagExpressionError.self) { try TagExpression(parsing: six + " && t7") }
        #expect(error.description.contains("at most 6"))
    }

    @Test func notCountsAsAnAndOperatorForTheLimit() throws {
        let sixOr = (1...6).map { "t\($0)" }.joined(separator: "||")
        _ = try TagExpression(parsing: "!" + sixOr)
        #expect(throws: TagExpressionError.self) { try TagExpression(parsing: "!" + sixOr + "||t7") }
        // Seven tags are fine with only ||.
        _ = try TagExpression(parsing: sixOr + "||t7")
    }

    @Test func repeatedTagsCountEachTime() {
        let repeated = Array(repeating: "a", count: 7).joined(separator: "&&")
        #expect(throws: TagExpressionError.self) { try TagExpression(parsing: repeated) }
    }

    @Test func aTagOfOneHundredTwentyCharactersIsTheLongest() throws {
        _ = try TagExpression(parsing: String(repeating: "x", count: 120))
        let error = try #require(throws: TagExpressionError.self) {
            try TagExpression(parsing: "a||" + String(repeating: "x", count: 121))
        }
        #expect(error.column == 4)
    }

    @Test(arguments: [
        ("", 1, "empty"),
        ("a ||", 5, "missing"),
        ("a | b", 3, "||"),
        ("a & b", 3, "&&"),
        ("a && (b || c", 6, "never closed"),
        ("a)", 2, "after the end"),
        ("a b", 3, "after the end"),
        ("world,sports", 6, "not allowed"),
        ("news/world", 5, "not allowed"),
        ("caf\u{E9}", 4, "not allowed"),
        ("&& a", 1, "expected a tag"),
        ("$InstallationId:[x]", 1, "system tag"),
        ("$Foo:{x}", 1, "invalid tag"),
        ("a || $UserId:{}", 6, "invalid tag"),
        ("()", 2, "expected a tag"),
    ])
    func errorsSayWhatAndWhere(text: String, column: Int, words: String) {
        do {
            _ = try TagExpression(parsing: text)
            Issue.record("'\(text)' was accepted")
        } catch {
            #expect(error.column == column, "\(error)")
            #expect(error.description.contains(words), "\(error)")
        }
    }

    @Test func tagValidationRules() throws {
        #expect(try Tag.validate("$installationid:{a=b}") == "$InstallationId:{a=b}")
        #expect(throws: TagError.self) { try Tag.validate("") }
        #expect(throws: TagError.self) { try Tag.validate("a b") }
        #expect(throws: TagError.self) { try Tag.validate(String(repeating: "y", count: 121)) }
        #expect(throws: TagError.self) { try Tag.validateList((0...60).map { "t\($0)" }) }
        #expect(try Tag.validateList((0..<60).map { "t\($0)" }).count == 60)
        #expect(throws: TagError.self) { try Tag.validateList(["$UserId:{a}", "$UserId:{b}"]) }
        #expect(try Tag.validateList(["a", "a", "b"]) == ["a", "b"])
    }

    // MARK: Property: the evaluator agrees with a truth table.

    /// A reference expression, evaluated and printed independently of the library.
    indirect enum Reference {
        case tag(Int)
        case not(Reference)
        case and(Reference, Reference)
        case or(Reference, Reference)

        static let names = ["World", "Politics", "Business", "Technology", "Science", "Sports"]

        /// Builds an expression from a list of choices (so it shrinks as the list does).
        static func build(_ choices: inout ArraySlice<Int>, depth: Int, onlyOr: Bool) -> Reference {
            let choice = choices.popFirst() ?? 0
            if depth > 3 || choice % 5 == 0 { return .tag(choice % names.count) }
            switch onlyOr ? 3 : choice % 4 {
            case 1: return .not(build(&choices, depth: depth + 1, onlyOr: onlyOr))
            case 2:
                return .and(build(&choices, depth: depth + 1, onlyOr: onlyOr), build(&choices, depth: depth + 1, onlyOr: onlyOr))
            default:
                return .or(build(&choices, depth: depth + 1, onlyOr: onlyOr), build(&choices, depth: depth + 1, onlyOr: onlyOr))
            }
        }

        func evaluate(_ present: Set<Int>) -> Bool {
            switch self {
            case .tag(let i): return present.contains(i)
            case .not(let e): return !e.evaluate(present)
            case .and(let a, let b): return a.evaluate(present) && b.evaluate(present)
            case .or(let a, let b): return a.evaluate(present) || b.evaluate(present)
            }
        }

        var usesAndOrNot: Bool {
            switch self {
            case .tag: return false
            case .not, .and: return true
            case .or(let a, let b): return a.usesAndOrNot || b.usesAndOrNot
            }
        }

        var tagCount: Int {
            switch self {
            case .tag: return 1
            case .not(let e): return e.tagCount
            case .and(let a, let b), .or(let a, let b): return a.tagCount + b.tagCount
            }
        }

        /// Fully parenthesised, with spacing chosen by `spaced`.
        func text(spaced: Bool) -> String {
            let s = spaced ? " " : ""
            switch self {
            case .tag(let i): return Self.names[i]
            case .not(let e): return "!\(s)(\(e.text(spaced: spaced)))"
            case .and(let a, let b): return "(\(a.text(spaced: spaced)))\(s)&&\(s)(\(b.text(spaced: spaced)))"
            case .or(let a, let b): return "(\(a.text(spaced: spaced)))\(s)||\(s)(\(b.text(spaced: spaced)))"
            }
        }
    }

    @Test func evaluatorAgreesWithTruthTable() async {
        await propertyCheck(count: 300, input: Gen.int(in: 0...1000).array(of: 1...25), Gen.bool) { choices, spaced in
            var slice = choices[...]
            let onlyOr = choices.first.map { $0 % 3 == 0 } ?? false
            let reference = Reference.build(&slice, depth: 0, onlyOr: onlyOr)
            let text = reference.text(spaced: spaced)
            let limit = reference.usesAndOrNot ? 6 : 20
            guard reference.tagCount <= limit else {
                #expect(throws: TagExpressionError.self) { try TagExpression(parsing: text) }
                return
            }
            guard let parsed = try? TagExpression(parsing: text) else {
                Issue.record("valid expression refused: \(text)")
                return
            }
            // The compact text re-parses to an equivalent expression.
            guard let reparsed = try? TagExpression(parsing: parsed.description) else {
                Issue.record("compact form refused: \(parsed.description)")
                return
            }
            for mask in 0..<(1 << Reference.names.count) {
                let present = Set((0..<Reference.names.count).filter { mask & (1 << $0) != 0 })
                let tags = Set(present.map { Reference.names[$0] })
                let expected = reference.evaluate(present)
                #expect(parsed.matches(tags) == expected, "\(text) with \(tags)")
                #expect(reparsed.matches(tags) == expected, "\(parsed.description) with \(tags)")
            }
        }
    }

    @Test func garbageNeverCrashesTheParser() async {
        let alphabet = Gen.element(of: Array("ab()!&|$:{} _-#@.,x\u{1F4F0}"))
        await propertyCheck(count: 500, input: alphabet.array(of: 0...30)) { characters in
            let text = String(characters.compactMap { $0 })
            do throws(TagExpressionError) {
                let parsed = try TagExpression(parsing: text)
                #expect(!parsed.tags.isEmpty)
            } catch {
                #expect(error.column >= 1 && error.column <= text.utf8.count + 1, "\(error) for \(text)")
            }
        }
    }
}
