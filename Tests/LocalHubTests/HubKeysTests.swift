import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import Testing

@testable import LocalHub

/// Keys as Azure has them (issue 31): two keys per rule, a version-1 file upgraded, keys not
/// fit to sign with refused, changes a command makes, and a key ring replaced while it serves.
@Suite struct HubKeysTests {
    static let listen = AuthorizationRule.listenRuleName
    static let full = AuthorizationRule.fullRuleName

    func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The key every app ships may only listen: a key file (or a database's keys) whose
    /// default Listen rule grants more, or that names a hub no path carries, is refused at
    /// start, naming the rule; the file is left as it is.
    @Test func aListenRuleThatGrantsMoreOrABadHubNameIsRefusedAtStart() throws {
        for (hub, rights, named) in [
            ("news", AccessRights.full, Self.listen), ("news", [.listen, .send], Self.listen),
            ("new\u{1B}[2Jsws", .listen, "the hub name"),
        ] {
            let directory = try folder()
            let url = directory.appendingPathComponent(HubKeys.fileName)
            let rules = HubKeys.defaultRules().map { rule in
                var rule = rule
                if rule.name == Self.listen { rule.rights = rights }
                return rule
            }
            let text = LocalHubKeyFile.encode(LocalHubKeyFile.Contents(hubs: [hub: rules]))
            try Data(text.utf8).write(to: url)
            #expect {
                _ = try HubKeys.loadOrCreate(in: directory, hubs: [hub])
            } throws: { error in
                "\(error)".contains(named) && "\(error)".contains(url.path)
            }
            #expect(try String(contentsOf: url, encoding: .utf8) == text)
        }
    }

    /// A key two rules share signs for both: a rule of its own carrying the Listen key every
    /// app ships, with every right, made that key a Full one (issue 44's review). Names that
    /// differ only in case are one name to Azure. Both are refused.
    @Test func rulesThatShareAKeyOrDifferOnlyInCaseAreRefused() throws {
        var rules = HubKeys.defaultRules()
        let listenKey = try #require(rules.first { $0.name == Self.listen }?.primaryKey)
        rules.append(AuthorizationRule(name: "evil", primaryKey: listenKey, secondaryKey: HubKeys.makeKey(), rights: .full))
        let shared = LocalHubKeyFile.Contents(hubs: ["news": rules]).problems()
        #expect(shared.contains { $0.contains("share a key") }, "\(shared)")
        let cased = LocalHubKeyFile.Contents(
            hubs: [
                "news": HubKeys.defaultRules() + [
                    AuthorizationRule(
                        name: Self.listen.lowercased(), primaryKey: HubKeys.makeKey(), secondaryKey: HubKeys.makeKey(),
                        rights: .full)
                ]
            ]
        ).problems()
        #expect(cased.contains { $0.contains("differ only in case") }, "\(cased)")
        #expect(LocalHubKeyFile.Contents(hubs: ["news": HubKeys.defaultRules()]).problems().isEmpty)
    }

    /// A version-1 file keeps its keys as the primaries, gains secondaries, and is written
    /// back as version 2, mode 0600.
    @Test func aVersionOneFileIsUpgradedKeepingItsKeys() throws {
        let directory = try folder()
        let (listenKey, fullKey) = (HubKeys.makeKey(), HubKeys.makeKey())
        let url = directory.appendingPathComponent(HubKeys.fileName)
        try Data(#"{"hubs":{"news":{"\#(Self.listen)":"\#(listenKey)","\#(Self.full)":"\#(fullKey)"}}}"#.utf8).write(to: url)
        let keys = try HubKeys.loadOrCreate(in: directory, hubs: ["news"])
        let rules = keys.rules(hub: "news")
        #expect(rules.map(\.name) == [Self.full, Self.listen])
        #expect(rules.map(\.primaryKey) == [fullKey, listenKey])
        #expect(rules.map(\.rights) == [.full, .listen])
        #expect(rules.allSatisfy { $0.secondaryKey.map { $0.utf8.count == 44 && $0 != $0.uppercased() } == true })
        let written = try LocalHubKeyFile.read(url)
        #expect(!written.isVersion1 && written.hubs == keys.contents.hubs)
        #expect(try JSONValue(parsing: Data(contentsOf: url))["version"] == .number("2"))
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // Read again, nothing changes.
        #expect(try HubKeys.loadOrCreate(in: directory, hubs: ["news"]) == keys)
    }

    /// An empty or six-character key was accepted, and a token signed with the empty key
    /// authorized; now the hub refuses to start on one, naming the command that fixes it.
    @Test(arguments: ["", "abcdef", String(repeating: "k", count: 31), String(repeating: "k", count: 40) + " x;"])
    func aKeyNotFitToSignWithIsRefusedAtStart(key: String) throws {
        let directory = try folder()
        let url = directory.appendingPathComponent(HubKeys.fileName)
        let good = HubKeys.makeKey()
        try Data(#"{"hubs":{"news":{"\#(Self.listen)":"\#(key)","\#(Self.full)":"\#(good)"}}}"#.utf8).write(to: url)
        #expect {
            try HubKeys.loadOrCreate(in: directory, hubs: ["news"])
        } throws: { error in
            "\(error)".contains("'breaking-news hub keys regenerate \(Self.listen) --key primary'")
        }
        // The command that fixes it works on the file the hub refused.
        let fixed = try HubKeys.change(.regenerate(rule: Self.listen, slot: .primary), hub: "news", in: directory)
        #expect(fixed.key(hub: "news", rule: Self.listen)?.utf8.count == 44)
        #expect(try HubKeys.loadOrCreate(in: directory, hubs: ["news"]).generation == 2)
    }

    @Test func changesAreThoseAzureAllows() throws {
        var keys = HubKeys(contents: LocalHubKeyFile.Contents(hubs: ["news": HubKeys.defaultRules()]))
        let before = keys
        try keys.apply(.regenerate(rule: Self.listen, slot: .secondary), hub: "NEWS")
        let (old, new) = (before.rules(hub: "news")[1], keys.rules(hub: "news")[1])
        #expect(new.primaryKey == old.primaryKey && new.secondaryKey != old.secondaryKey && keys.generation == 2)
        try keys.apply(.add(rule: "backend.v2", rights: [.send]), hub: "news")
        #expect(
            keys.rules(hub: "news").map(\.name) == [
                "DefaultFullSharedAccessSignature", "DefaultListenSharedAccessSignature", "backend.v2",
            ])
        for (change, reason) in [
            (HubKeys.Change.remove(rule: Self.full), "cannot be removed"), (.add(rule: "Backend.V2", rights: .listen), "already"),
            (.add(rule: "a b", rights: .listen), "letters, digits"), (.add(rule: "m", rights: [.manage, .send]), "Manage needs"),
            (.regenerate(rule: "nobody", slot: .primary), "no rule named"), (.remove(rule: "nobody"), "no rule named"),
        ] {
            var copy = keys
            #expect { try copy.apply(change, hub: "news") } throws: { "\($0)".contains(reason) }
            #expect(copy == keys, "a refused change changed nothing")
        }
        for index in 4...12 { try keys.apply(.add(rule: "r\(index)", rights: .listen), hub: "news") }
        #expect { try keys.apply(.add(rule: "r13", rights: .listen), hub: "news") } throws: { "\($0)".contains("12 rules") }
        try keys.apply(.remove(rule: "backend.v2"), hub: "news")
        #expect(keys.rules(hub: "news").count == 11)
        #expect(AccessRights(names: "listen, Send,MANAGE") == .full && AccessRights(names: "Listen,Root") == nil)
        #expect(AccessRights(names: "") == nil)
    }

    /// The ring takes a token signed with either key of a rule; once replaced, a token signed
    /// with a regenerated key is refused (even one verified before), and only the streams
    /// opened with a key that is gone are closed.
    @Test func aReplacedRingRefusesTheOldKeyAndClosesOnlyItsStreams() async throws {
        let keys = HubKeys(contents: LocalHubKeyFile.Contents(hubs: ["news": HubKeys.defaultRules()]))
        let ring = KeyRing(keys: keys, hubs: ["news"], clockSkew: 30)
        let rule = keys.rules(hub: "news")[1]
        func header(_ key: String) -> String {
            SharedAccessSignature.make(resource: "http://127.0.0.1/news", keyName: rule.name, key: key)
        }
        func verify(_ key: String) -> SASVerifier.SignedToken? {
            try? ring.verifier(hub: "news")?.verify(header: header(key), host: "127.0.0.1", path: "/news/x")
        }
        #expect(verify(rule.primaryKey)?.key == rule.primaryKey)
        #expect(verify(rule.secondaryKey!)?.key == rule.secondaryKey)
        #expect(verify(HubKeys.makeKey()) == nil)

        let streams = DeviceStreams()
        var sinks: [(BufferedStreamSink, AsyncStream<StreamEvent>.Iterator)] = []
        for key in [rule.primaryKey, rule.secondaryKey!] {
            let sink = BufferedStreamSink()
            _ = try streams.listen(
                hub: "news", device: "ab\(sinks.count)", sink: sink,
                credential: StreamCredential(hub: "news", rule: rule.name, key: key))
            sinks.append((sink, sink.events.makeAsyncIterator()))
        }
        var changed = keys
        try changed.apply(.regenerate(rule: rule.name, slot: .primary), hub: "news")
        #expect(!ring.replace(with: keys), "the same keys are not a change")
        #expect(ring.replace(with: changed))
        #expect(verify(rule.primaryKey) == nil, "the remembered verification went with the old key")
        #expect(verify(rule.secondaryKey!) != nil)
        #expect(verify(changed.rules(hub: "news")[1].primaryKey) != nil)
        #expect(streams.closeStreams(signedWithKeysNotIn: ring.isValid) == 1)
        #expect(streams.count == 1)
        #expect(await sinks[0].1.next() == nil, "the stream of the old key ended")
        #expect(streams.openCount(hub: "news", device: "ab1") == 1)
    }
}
