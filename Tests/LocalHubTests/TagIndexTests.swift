import HubTestSupport
import LocalHub
import NotificationHubs
import PropertyBased
import Testing

/// The tag index agrees with evaluating each expression against each installation's tags,
/// through adds, replacements and removals.
@Suite struct TagIndexTests {
    static let tags = ["World", "Politics", "Business", "Technology", "Science", "Sports"]

    @Test func indexAgreesWithBruteForce() async {
        let operation = Gen.int(in: 0...10_000).array(of: 1...60)
        let expressionChoices = Gen.int(in: 0...10_000).array(of: 1...8)
        await propertyCheck(count: 150, input: operation, expressionChoices) { operations, choices in
            var index = TagIndex()
            var model: [String: Installation] = [:]
            for op in operations {
                let id = "i\(op % 13)"
                if op % 7 == 0 {
                    index.setInstallation(nil, id: id, hub: "news")
                    model[id] = nil
                } else {
                    let tags = Self.tags.enumerated().filter { (op >> $0.offset) & 1 == 1 }.map(\.element)
                    let installation = newsInstallation(id, device: String(format: "%04x", op % 13), tags: tags)
                    index.setInstallation(installation, id: id, hub: "news")
                    model[id] = installation
                }
            }
            // An expression built from the choices: a && !b || c …
            var text = ""
            for (i, choice) in choices.prefix(6).enumerated() {
                if i > 0 { text += choice % 2 == 0 ? " && " : " || " }
                if choice % 3 == 0 { text += "!" }
                text += Self.tags[choice % Self.tags.count]
            }
            guard let expression = try? TagExpression(parsing: text) else {
                Issue.record("could not parse \(text)")
                return
            }
            let matched = Set(index.resolve(expression, templates: true).map { index.target($0).owner })
            let expected = Set(
                model.values.filter { expression.matches(Set($0.effectiveTags + ["simpleAPNSTemplate"])) }.map {
                    "i:" + $0.installationId
                })
            #expect(matched == expected, "\(text)")
            #expect(index.resolve(nil, templates: true).count == model.count)
            #expect(index.resolve(nil, templates: false).count == model.count)
        }
    }

    /// Issue 10 item 10: every distinct template body stayed numbered after its last user
    /// was deleted, and each send sized a cache by all of them.
    @Test func templateNumbersAreGivenBackWithTheirLastUser() {
        var index = TagIndex()
        for i in 0..<300 {
            let templates = Dictionary(
                uniqueKeysWithValues: (0..<10).map {
                    ("t\($0)", InstallationTemplate(body: #"{"aps":{"alert":"$(m)"},"i":\#(i * 10 + $0)}"#))
                })
            let installation = Installation(
                installationId: "i\(i)", platform: .apns, pushChannel: "AB", tags: ["World"], templates: templates)
            index.setInstallation(installation, id: "i\(i)", hub: "news")
        }
        #expect(index.templateCount == 3000)
        #expect(index.templateNumberLimit == 3000)
        for i in (0..<300).shuffled() { index.setInstallation(nil, id: "i\(i)", hub: "news") }
        #expect(index.templateCount == 0)
        #expect(index.templateNumberLimit == 0)
        #expect(index.targetCount == 0)
        // A body two installations share stays while one of them holds it.
        index.setInstallation(newsInstallation("a", device: "AB", tags: []), id: "a", hub: "news")
        index.setInstallation(newsInstallation("b", device: "CD", tags: []), id: "b", hub: "news")
        #expect(index.templateCount == 1)
        index.setInstallation(nil, id: "a", hub: "news")
        #expect(index.templateCount == 1)
        index.setInstallation(nil, id: "b", hub: "news")
        #expect(index.templateCount == 0)
    }
}
