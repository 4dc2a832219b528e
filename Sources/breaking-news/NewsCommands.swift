import ArgumentParser
import BreakingNewsKit
import Foundation
import NewsCommandLine
import NotificationHubs

/// `breaking-news subscribe World Sports`: store the selection and register it.
struct SubscribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Choose categories and register this terminal's installation with them (--none: unsubscribe from all).",
        discussion: """
            With no categories and no --none it changes nothing: it prints the categories chosen \
            now and its usage, and exits 2.
            """)

    @Argument(help: "Categories: World, Politics, Business, Technology, Science, Sports.")
    var categories: [String] = []

    @Flag(name: .customLong("none"), help: "Register no categories: news of none reaches this terminal.")
    var none = false

    @OptionGroup var hubFlags: HubFlags

    func validate() throws {
        if none, !categories.isEmpty { throw ValidationError("--none takes no categories") }
    }

    func run() async throws {
        let profile = try openProfile()
        guard none || !categories.isEmpty else {
            // An answer, not an act: what is chosen now, and how to change it.
            let chosen = profile.selectedCategories.map(\.name)
            say("Chosen now: \(chosen.isEmpty ? "none" : chosen.joined(separator: ", ")).")
            throw CommandFailure.usage(
                "nothing changed: name the categories to subscribe to, or --none for none. Usage: breaking-news subscribe "
                    + "(CATEGORY … | --none), CATEGORY one of \(profile.catalog.categories.map(\.name).joined(separator: ", "))")
        }
        let chosen: [BreakingNewsKit.Category]
        do {
            chosen = try profile.catalog.resolve(categories)
        } catch {
            throw CommandFailure.rejected(error.description)
        }
        let subscriber = profile.subscriber(try await hubFlags.endpoint(paths: profile.paths))
        let outcome: RegistrationOutcome
        do {
            outcome = try await subscriber.subscribe(chosen.map(\.name))
        } catch {
            throw CommandFailure("cannot store the selection: \(error.localizedDescription)", exitCode: .failure)
        }
        let names = chosen.isEmpty ? "no categories" : chosen.map(\.name).joined(separator: ", ")
        switch outcome.record.state {
        case .registered:
            say("Subscribed to \(names).")
        case .pending:
            throw CommandFailure(
                "Saved \(names), but \(outcome.error.map { "\($0)" } ?? "the hub is unreachable"). It registers at the next launch; try the same command again.",
                exitCode: .hubUnreachable)
        case .failed:
            throw CommandFailure.hub(
                outcome.error ?? .status(0, detail: "unknown"), action: "Subscribing (the selection is saved)",
                doing: .subscribing, embedded: subscriber.endpoint.isEmbedded)
        }
    }
}

/// `breaking-news unregister`: remove this terminal from the hub.
struct UnregisterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unregister",
        abstract: "Remove this terminal's installation and its device claim from the hub, leaving nothing of it there.",
        discussion: """
            The received log, the chosen categories and this terminal's identity stay; the next \
            'breaking-news subscribe' (or opening the UI) registers it again.
            """)

    @OptionGroup var hubFlags: HubFlags

    func run() async throws {
        let profile = try openProfile()
        let subscriber = profile.subscriber(try await hubFlags.endpoint(paths: profile.paths))
        do {
            _ = try await subscriber.unregister()
        } catch {
            throw CommandFailure.hub(
                error, action: "Unregistering", doing: .subscribing, embedded: subscriber.endpoint.isEmbedded)
        }
        say(
            "Unregistered: the hub keeps nothing of this terminal. The received log and the selection stay; "
                + "'breaking-news subscribe' registers it again.")
    }
}

/// `breaking-news categories`: the stored selection, the unread counts and the registration.
struct CategoriesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "categories", abstract: "Show the chosen categories, their unread counts and whether they are registered.")

    @Flag(
        name: .shortAndLong,
        help: "Print JSON: {categories, unread: {<category>: n, …}, unreadTotal, installationId, registration}.")
    var json = false

    func run() async throws {
        let profile = try openProfile()
        let chosen = Set(profile.selectedCategories.map(\.name))
        let record = profile.lastRegistration
        let unread = profile.log.unreadCounts
        if json {
            say(
                JSONValue.object(dropping: [
                    ("categories", .strings(profile.catalog.categories.map(\.name).filter(chosen.contains))),
                    (
                        "unread",
                        .object(profile.catalog.categories.map { ($0.name, .number(String(unread[$0.name] ?? 0))) })
                    ),
                    ("unreadTotal", .number(String(unread.values.reduce(0, +)))),
                    ("installationId", .string(profile.identity.installationId)),
                    (
                        "registration",
                        record.map {
                            .object(dropping: [
                                ("state", .string($0.state.rawValue)), ("at", .string($0.at)), ("hub", .string($0.hub)),
                                ("categories", .strings($0.categories)), ("detail", $0.detail.map(JSONValue.string)),
                            ])
                        }
                    ),
                ]).text)
            return
        }
        for category in profile.catalog.categories {
            let mark = chosen.contains(category.name) ? "[x]" : "[ ]"
            let badge = unread[category.name].map { "  (\($0) unread)" } ?? ""
            say("\(mark) \(category.name)\(badge)")
        }
        guard let record else {
            say("Not registered yet: run 'breaking-news subscribe <categories>'.")
            return
        }
        let registered = record.categories.isEmpty ? "no categories" : record.categories.joined(separator: ", ")
        switch record.state {
        case .registered: say("Registered \(registered) at \(DisplayTime.short(record.at)) on \(record.hub).")
        case .pending:
            say(
                "Pending since \(DisplayTime.short(record.at)): \(TerminalText.line(record.detail ?? "the hub was unreachable"))."
            )
        case .failed: say("Failed at \(DisplayTime.short(record.at)): \(TerminalText.line(record.detail ?? "refused")).")
        }
        if record.state == .registered, Set(record.categories) != chosen {
            say("The selection changed since; run 'breaking-news subscribe' to register it.")
        }
    }
}

/// `breaking-news send TEXT`: breaking news per category, or raw sends.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send breaking news to the categories named (--category, repeatable, or --all), or a raw send.",
        discussion: """
            Examples:
              send "Markets rally" --all        (every category)
              send "Goal!" -c Sports -c World
              send --tags "World || Sports" --property messageParam=hi
              send --apple '{"aps":{"alert":"hi"}}' --tags World
            Add --test to see the hub's outcome for each device reached.
            """)

    @Argument(help: "The news text (sent as 'Breaking <Category> News : <text>').")
    var text: String?

    @Option(name: [.customShort("c"), .customLong("category")], help: "A category to send to (repeatable).")
    var categories: [String] = []

    @Flag(name: .shortAndLong, help: "Send to every category.")
    var all = false

    @Option(help: "A tag expression, for a raw send.")
    var tags: String?

    @Option(name: .customLong("property"), help: "key=value, a template property for a raw send (repeatable).")
    var properties: [String] = []

    @Option(help: "A native APNs JSON payload.")
    var apple: String?

    @Flag(help: "A test send: print the hub's outcome for each device reached.")
    var test = false

    @OptionGroup var hubFlags: HubFlags

    func validate() throws {
        let raw = tags != nil || !properties.isEmpty || apple != nil
        if raw, text != nil || !categories.isEmpty {
            throw ValidationError("give either TEXT with --category, or a raw send with --tags/--property/--apple, not both")
        }
        if !raw, text == nil { throw ValidationError("give the news TEXT to send") }
        if raw, all { throw ValidationError("--all sends news TEXT to every category; a raw send takes --tags") }
        if all, !categories.isEmpty { throw ValidationError("give --category (repeatable) or --all, not both") }
        if !raw, !all, categories.isEmpty {
            // As on the Compose screen, nothing goes anywhere the sender did not choose.
            throw ValidationError("name the categories to send to: --category C (repeatable, -c), or --all")
        }
        if apple != nil, !properties.isEmpty { throw ValidationError("--apple sends a native payload; it takes no --property") }
        for property in properties where !property.contains("=") {
            throw ValidationError("--property takes key=value, not '\(property)'")
        }
    }

    func run() async throws {
        let profile = try openProfile()
        if let text {
            let chosen: [BreakingNewsKit.Category]
            do {
                chosen = all ? profile.catalog.categories : try profile.catalog.resolve(categories)
                _ = try Publisher.validate(text)
            } catch let error as SubscribeError {
                throw CommandFailure.rejected(error.description)
            } catch {
                throw CommandFailure.rejected("\(error)")
            }
            let endpoint = try await hubFlags.endpoint(paths: profile.paths)
            let publisher = profile.publisher(endpoint)
            let results: [CategoryResult]
            do {
                results = try await publisher.send(text, to: chosen, test: test)
            } catch {
                throw CommandFailure.rejected(error.description)
            }
            // A line per category on standard output; each error once, on standard error.
            var failures: [(error: HubError, categories: [String])] = []
            for result in results {
                let name = result.category.name.padding(toLength: 10, withPad: " ", startingAt: 0)
                switch result.result {
                case .success(let receipt):
                    say("\(name) sent  \(receipt.notificationId ?? "")")
                    if let outcome = receipt.outcome { printOutcome(outcome, indent: "           ") }
                case .failure(let error):
                    say("\(name) failed")
                    if let i = failures.firstIndex(where: {
                        $0.error.readableDetail == error.readableDetail && $0.error.status == error.status
                    }) {
                        failures[i].categories.append(result.category.name)
                    } else {
                        failures.append((error, [result.category.name]))
                    }
                }
            }
            if endpoint.isEmbedded { await publisher.waitUntilDispatched(results.compactMap { try? $0.result.get() }) }
            for failure in failures.dropLast() {
                let action = "Sending to \(failure.categories.joined(separator: ", "))"
                printError(
                    "breaking-news: "
                        + CommandFailure.hub(failure.error, action: action, doing: .sending, embedded: endpoint.isEmbedded)
                        .message)
            }
            if let last = failures.last {
                let first = failures[0].error
                let action = "Sending to \(last.categories.joined(separator: ", "))"
                let failure = CommandFailure.hub(last.error, action: action, doing: .sending, embedded: endpoint.isEmbedded)
                // The exit code is the first error's.
                throw CommandFailure(
                    failure.message,
                    exitCode: CommandFailure.hub(first, action: "", doing: .sending, embedded: endpoint.isEmbedded).exitCode)
            }
            return
        }
        var map: [String: String] = [:]
        for property in properties {
            let parts = property.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            map[String(parts[0])] = String(parts[1])
        }
        if let tags {
            do { _ = try TagExpression(parsing: tags) } catch { throw CommandFailure.rejected(error.description) }
        }
        if let apple, (try? JSONValue(parsing: apple))?.objectMembers == nil {
            throw CommandFailure.rejected("--apple must be a JSON object such as {\"aps\":{\"alert\":\"hi\"}}")
        }
        let endpoint = try await hubFlags.endpoint(paths: profile.paths)
        let publisher = profile.publisher(endpoint)
        do {
            let receipt: SendReceipt
            if let apple {
                receipt = try await publisher.sendApple(apple, tags: tags, test: test)
            } else {
                receipt = try await publisher.sendTemplate(map, tags: tags, test: test)
            }
            say("sent  \(receipt.notificationId ?? "")")
            if let outcome = receipt.outcome { printOutcome(outcome, indent: "      ") }
            if endpoint.isEmbedded { await publisher.waitUntilDispatched([receipt]) }
        } catch let error as HubError {
            throw CommandFailure.hub(error, action: "Sending", doing: .sending, embedded: endpoint.isEmbedded)
        }
    }

    func printOutcome(_ outcome: NotificationOutcome, indent: String) {
        say("\(indent)outcome: \(outcome.success) succeeded, \(outcome.failure) failed")
        for result in outcome.results {
            say("\(indent)  \(TerminalText.line(String(result.pnsHandle.prefix(16))))…  \(TerminalText.line(result.outcome))")
        }
    }
}

/// `breaking-news installation`: this terminal's installation as the hub has it; with
/// `--new-device-token`, a new token for it.
struct InstallationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "installation", abstract: "Show this terminal's installation as the hub has it (the tutorial's check).",
        discussion: """
            With --new-device-token, gives this terminal a new device token (one that leaked, or that another terminal \
            claimed): claims it, registers the installation with it and the chosen categories, fetches what is left \
            for the old token, and lets the old claim go.
            """)

    @OptionGroup var hubFlags: HubFlags

    @Flag(help: "Replace this terminal's device token with a new one, registered at once.")
    var newDeviceToken = false

    func run() async throws {
        let profile = try openProfile()
        let endpoint = try await hubFlags.endpoint(paths: profile.paths)
        if newDeviceToken { return try await replaceToken(profile, endpoint) }
        do {
            let installation = try await endpoint.listenClient().installation(id: profile.identity.installationId)
            say(installation.json.prettyText)
        } catch {
            if error.isNotFound {
                throw CommandFailure(
                    "the hub has no installation \(profile.identity.installationId) yet: run 'breaking-news subscribe'",
                    exitCode: .inputRejected)
            }
            throw CommandFailure.hub(error, action: "Reading the installation", doing: .reading, embedded: endpoint.isEmbedded)
        }
    }
}

extension InstallationCommand {
    /// The new token claimed and registered; the old one retired (`NewsProfile.retirePreviousDevice`).
    func replaceToken(_ profile: NewsProfile, _ endpoint: HubEndpoint) async throws {
        let old = profile.currentIdentity.deviceToken
        let new = try DeviceIdentity.replaceToken(in: profile.installations)
        let outcome = await profile.subscriber(endpoint).register(profile.selectedCategories)
        if let error = outcome.error {
            throw CommandFailure.hub(
                error, action: "Registering the new device token", doing: .subscribing, embedded: endpoint.isEmbedded)
        }
        let retired = profile.installations.load().values.previousDeviceToken == nil
        say(
            "this terminal's device token is now \(new.deviceToken.prefix(16).lowercased())…, registered; the old one "
                + "(\(old.prefix(16).lowercased())…) \(retired ? "is let go" : "is let go once what is left for it is fetched")")
    }
}
