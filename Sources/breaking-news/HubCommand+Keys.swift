import ArgumentParser
import BreakingNewsKit
import Foundation
import LocalHub
import LocalHubSupport
import NewsCommandLine
import NotificationHubs

extension HubCommand {
    /// `breaking-news hub keys`: the hub's authorization rules, listed and changed on the
    /// hub's own data folder or database, never over HTTP (a leaked Full key cannot lock the
    /// owner out). A running hub, every node of a cluster, serves a change without a restart;
    /// the command returns once they all do.
    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the hub's authorization rules, regenerate their keys, add or remove rules.",
            discussion: """
                Each rule has a primary and a secondary key, as in Azure: move clients to one while the other is \
                regenerated. A change is served by the running hub (every live node of a cluster) at once, and the \
                command returns once it is: tokens signed with a regenerated key are refused from then on and the \
                streams opened with one are closed. The terminals of this machine follow by themselves.
                """,
            subcommands: [List.self, Regenerate.self, Add.self, Remove.self], defaultSubcommand: List.self)
    }
}

/// Where the keys are: the data folder's `keys.json`, or a cluster's database; and the hub.
struct KeyPlace: ParsableArguments {
    @OptionGroup var place: HubPlace

    @Option(help: "The hub.")
    var hub: String = LocalHubDefaults.hubName

    var folder: URL { place.folder }

    /// `body` with the cluster's database open, or nil when the keys are the folder's.
    func withStore<T>(_ body: (PostgresHubStore) async throws -> T) async throws -> T? {
        guard let url = place.storeURL else { return nil }
        return try await HubStoreAccess.withPostgres(url, password: try place.storePassword(), purpose: "keys", body)
    }
}

extension HubCommand.Keys {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the rules and their rights (keys only with --show-keys).")

        @OptionGroup var place: KeyPlace

        @Flag(help: "Print the keys too.")
        var showKeys = false

        @Flag(help: "Print {\"hub\", \"generation\", \"rules\": [{\"name\", \"rights\", …}]} as JSON.")
        var json = false

        func run() async throws {
            let contents: LocalHubKeyFile.Contents
            let fromDatabase = try await place.withStore { store in
                guard let stored = try await KeyChange.failing({ try await store.storedKeys() }) else {
                    throw CommandFailure("the database holds no keys yet (the first node makes them)", exitCode: .failure)
                }
                return stored
            }
            if let fromDatabase {
                contents = fromDatabase
            } else {
                contents = try KeyChange.failingNow { try HubKeys.read(in: place.folder).contents }
            }
            guard let rules = contents.rules(hub: place.hub) else {
                throw CommandFailure("there is no hub named '\(place.hub)'", exitCode: .failure)
            }
            if json {
                let listed = rules.map { rule in
                    JSONValue.object(dropping: [
                        ("name", .string(rule.name)),
                        ("rights", .strings(rule.rights.description.split(separator: ",").map(String.init))),
                        ("primaryKey", showKeys ? .string(rule.primaryKey) : nil),
                        ("secondaryKey", showKeys ? rule.secondaryKey.map(JSONValue.string) : nil),
                    ])
                }
                say(
                    JSONValue.object([
                        ("hub", .string(contents.hubName(place.hub) ?? place.hub)),
                        ("generation", .number(String(contents.generation))), ("rules", .array(listed)),
                    ]).text)
                return
            }
            say("hub \(contents.hubName(place.hub) ?? place.hub), keys of generation \(contents.generation):")
            let width = rules.map(\.name.count).max() ?? 0
            for rule in rules {
                var line = "  " + rule.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + rule.rights.description
                if showKeys { line += "\n    primary:   \(rule.primaryKey)\n    secondary: \(rule.secondaryKey ?? "")" }
                say(line)
            }
        }
    }

    struct Regenerate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a rule a new key; tokens signed with the old one are refused from then on.")

        @Argument(help: "The rule, e.g. DefaultListenSharedAccessSignature.")
        var rule: String

        @Option(help: "Which key: primary or secondary.")
        var key: LocalHubKeyFile.Slot = .primary

        @OptionGroup var place: KeyPlace
        @OptionGroup var wait: KeyWait

        func run() async throws {
            try await KeyChange(change: .regenerate(rule: rule, slot: key), place: place, wait: wait).run(
                done: "regenerated the \(key.rawValue) key of \(rule)")
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a rule with new keys (at most 12 per hub, as in Azure).")

        @Argument(help: "The rule's name: letters, digits, '.', '-', '_'.")
        var rule: String

        @Option(help: ArgumentHelp("Its rights: Listen, Send, Manage (Manage needs the other two).", valueName: "rights"))
        var rights: String

        @OptionGroup var place: KeyPlace
        @OptionGroup var wait: KeyWait

        func validate() throws {
            guard AccessRights(names: rights) != nil else {
                throw ValidationError("--rights takes Listen, Send and Manage, separated by commas")
            }
        }

        func run() async throws {
            let rights = AccessRights(names: rights) ?? .listen
            try await KeyChange(change: .add(rule: rule, rights: rights), place: place, wait: wait).run(
                done: "added \(rule) (\(rights))")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a rule (not one of the two default rules, which the terminals use).")

        @Argument(help: "The rule.")
        var rule: String

        @OptionGroup var place: KeyPlace
        @OptionGroup var wait: KeyWait

        func run() async throws {
            try await KeyChange(change: .remove(rule: rule), place: place, wait: wait).run(done: "removed \(rule)")
        }
    }
}

extension LocalHubKeyFile.Slot: ExpressibleByArgument {}

struct KeyWait: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "How long to wait for the running hub (every live node) to serve the change (s, m, h).", valueName: "duration"))
    var timeout: HubDuration = HubDuration(seconds: 60)
}

/// One change of the keys, made where they are kept, then waited for.
struct KeyChange {
    let change: HubKeys.Change
    let place: KeyPlace
    let wait: KeyWait

    /// How recently a node must have been heard from to be waited for: three of its notes.
    static let liveWindow: TimeInterval = 45

    func run(done: String) async throws {
        let changedInDatabase = try await place.withStore { store in
            let (change, hub) = (change, place.hub)
            let contents = try await Self.failing {
                try await store.changeKeys { keys in
                    var edited = HubKeys(contents: keys)
                    try edited.apply(change, hub: hub)
                    keys = edited.contents
                    return true
                }
            }
            say("\(done) (hub \(hub), keys of generation \(contents.generation), kept in the database)")
            try await waitForNodes(store, generation: contents.generation)
            return true
        }
        if changedInDatabase == nil {
            // A node of a cluster serves the database's keys; its folder's are a copy it rewrites.
            let running = LocalHubState.read(place.folder.appendingPathComponent(LocalHubState.fileName))
            if let running, let node = running.node, LocalProcess.isAlive(running.pid) {
                throw CommandFailure(
                    "the hub of \(place.folder.path) is node \(node) of a cluster, whose keys are kept in its database: "
                        + "change them there with --store postgres://…", exitCode: .usage)
            }
            let keys = try Self.failingNow { try HubKeys.change(change, hub: place.hub, in: place.folder) }
            say("\(done) (hub \(place.hub), keys of generation \(keys.generation), in \(place.folder.path))")
            try await waitForHub(generation: keys.generation)
        }
    }

    /// Runs `body`, turning what it throws into a one-line failure.
    static func failing<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure("\(error)", exitCode: .inputRejected)
        }
    }

    static func failingNow<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure("\(error)", exitCode: .inputRejected)
        }
    }

    private var deadline: Date { Date().addingTimeInterval(wait.timeout.seconds) }

    /// Waits until the hub running on the folder says it serves `generation`.
    private func waitForHub(generation: Int64) async throws {
        let stateURL = place.folder.appendingPathComponent(LocalHubState.fileName)
        let deadline = deadline
        while true {
            guard let state = LocalHubState.read(stateURL), LocalProcess.isAlive(state.pid) else {
                say("no hub is running on \(place.folder.path): it serves the new keys when it starts")
                return
            }
            if let served = state.keysGeneration, served >= generation {
                say("the running hub (pid \(state.pid)) serves them now; 'hub connection-strings' prints the new strings")
                return
            }
            guard Date() < deadline else {
                throw CommandFailure(
                    "the running hub (pid \(state.pid)) has not served the change within \(wait.timeout); it is kept in "
                        + "keys.json and served at its next start (see its hub.log)", exitCode: .failure)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits until every node heard from lately says it serves `generation`.
    private func waitForNodes(_ store: PostgresHubStore, generation: Int64) async throws {
        let deadline = deadline
        while true {
            let nodes = try await Self.failing {
                try await store.keysServed(heardWithin: Self.liveWindow, now: Date())
            }
            let behind = nodes.filter { $0.generation < generation }.map(\.node)
            // Nodes that noted their reading lately, but not in the window: stopped, or cut off.
            let quiet = try await Self.failing { try await store.clusterStatus() }.nodes.map(\.name).filter { name in
                !nodes.contains { $0.node == name }
            }
            let unheard =
                quiet.isEmpty
                ? ""
                : "; not heard from in the last \(Int(Self.liveWindow)) s: \(quiet.joined(separator: ", ")) (it serves them once it runs again)"
            if nodes.isEmpty {
                say("no node is running: they serve the new keys when they start\(unheard)")
                return
            }
            if behind.isEmpty {
                say("every live node serves them now (\(nodes.map(\.node).joined(separator: ", ")))\(unheard)")
                return
            }
            guard Date() < deadline else {
                throw CommandFailure(
                    "\(behind.joined(separator: ", ")) has not served the change within \(wait.timeout); the keys are "
                        + "kept in the database and served by every node that starts", exitCode: .failure)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
