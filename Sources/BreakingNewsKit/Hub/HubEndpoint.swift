import Foundation
import LocalHubSupport
import NotificationHubs

/// Which hub this terminal talks to, with which keys.
public struct HubEndpoint: Sendable {
    /// Registers and receives (the app's key; Listen is enough).
    public let listen: ConnectionString
    /// Sends (needs Send).
    public let send: ConnectionString
    public let hubName: String
    /// The embedded local hub this product started or found, when it is that one.
    public let embedded: EmbeddedHub?

    public var isEmbedded: Bool { embedded != nil }

    public init(listen: ConnectionString, send: ConnectionString, hubName: String, embedded: EmbeddedHub? = nil) {
        self.listen = listen
        self.send = send
        self.hubName = hubName
        self.embedded = embedded
    }

    /// When `current` starts the embedded hub.
    public enum Start: Sendable, Hashable {
        /// Whenever none runs: a user's action (subscribe, send).
        case always
        /// Only when it crashed (its state file outlived it): an open window. A hub stopped on
        /// purpose removed its file, so `hub stop` stays stopped while windows are open.
        case afterCrash
        /// Never: only wait for one (a receiver of `log --follow`).
        case never
    }

    /// The endpoint to call now. For the embedded hub: the hub running now, verified to be
    /// ours (`LocalHubTrust`) before any token goes to it; it may have moved since this
    /// endpoint was made. A hub that is not running is started as `starting` says.
    /// Otherwise this endpoint.
    public func current(starting: Start = .always) async throws(HubError) -> HubEndpoint {
        do throws(LocateError) {
            return try await locate(starting: starting)
        } catch {
            switch error {
            case .notRunning: throw HubError.unreachable("no local hub is running")
            case .unavailable(let detail):
                throw HubError.unreachable(
                    starting == .always ? "the local hub is not running and could not be started: \(detail)" : detail)
            }
        }
    }

    /// Why `locate` found no hub to call.
    public enum LocateError: Error, Sendable, Hashable {
        /// The embedded hub is not running (stopped with `hub stop`, or never started), and
        /// was not to be started.
        case notRunning
        /// It could not be found or started: its port held by another, a start that failed,
        /// a hub that does not answer as ours.
        case unavailable(String)
    }

    /// `current`, with why there is no hub typed.
    public func locate(starting: Start) async throws(LocateError) -> HubEndpoint {
        guard let embedded else { return self }
        let state: LocalHubState
        do {
            if starting == .always || (starting == .afterCrash && embedded.crashed) {
                state = try await embedded.ensureRunning()
            } else if let running = try await embedded.verified() {
                state = running
            } else if let holder = embedded.portHolder() {
                throw LocateError.unavailable("\(embedded.portTaken(by: holder))")
            } else {
                throw LocateError.notRunning
            }
        } catch let error as LocateError {
            throw error
        } catch let error as LocalHubTrust.Distrust where error.kind == .stale {
            // Its state file outlived it and it is not to be started here.
            throw .notRunning
        } catch {
            throw .unavailable("\(error)")
        }
        do {
            let strings = try embedded.connectionStrings(baseURL: state.url)
            return HubEndpoint(
                listen: try ConnectionString(parsing: strings.listen), send: try ConnectionString(parsing: strings.full),
                hubName: hubName, embedded: embedded)
        } catch {
            throw .unavailable("\(error)")
        }
    }

    /// `https://ns.servicebus.windows.net/hub`, or the local hub's URL.
    public var hubURL: String { listen.hubURL(hubName) }

    public func listenClient(retry: RetryPolicy = RetryPolicy()) -> HubClient {
        HubClient(connectionString: listen, hub: hubName, retryPolicy: retry)
    }

    public func sendClient(retry: RetryPolicy = RetryPolicy()) -> HubClient {
        HubClient(connectionString: send, hub: hubName, retryPolicy: retry)
    }
}

/// Where the hub settings come from: flags first, then the environment.
public struct HubOptions: Sendable, Equatable {
    public var connectionString: String?
    public var sendConnectionString: String?
    public var hub: String?

    public init(connectionString: String? = nil, sendConnectionString: String? = nil, hub: String? = nil) {
        self.connectionString = connectionString
        self.sendConnectionString = sendConnectionString
        self.hub = hub
    }

    /// Fills what the flags left out from `BREAKING_NEWS_CONNECTION_STRING`,
    /// `BREAKING_NEWS_SEND_CONNECTION_STRING` and `BREAKING_NEWS_HUB`.
    public func withEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> HubOptions {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        return HubOptions(
            connectionString: connectionString ?? value("BREAKING_NEWS_CONNECTION_STRING"),
            sendConnectionString: sendConnectionString ?? value("BREAKING_NEWS_SEND_CONNECTION_STRING"),
            hub: hub ?? value("BREAKING_NEWS_HUB"))
    }
}

/// Why no hub could be settled on. `kind` tells the command which exit code to use.
public struct HubResolutionError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        case usage, rejected, unreachable
    }

    public let kind: Kind
    public let description: String
}

extension HubEndpoint {
    /// The hub to use: the one a connection string names, or the embedded local hub (found,
    /// or started in the background when none answers).
    /// `onHubStart` is told each time a call through the endpoint starts the embedded hub
    /// (this one included): the screen says so.
    public static func resolve(
        _ options: HubOptions, paths: Paths, environment: [String: String] = ProcessInfo.processInfo.environment,
        onHubStart: (@Sendable () -> Void)? = nil
    )
        async throws(HubResolutionError) -> HubEndpoint
    {
        let options = options.withEnvironment(environment)
        guard let text = options.connectionString else {
            if options.sendConnectionString != nil {
                throw HubResolutionError(
                    kind: .usage, description: "a send connection string needs a connection string (and a hub) too")
            }
            var embedded = EmbeddedHub(paths: paths, environment: environment)
            embedded.onStart = onHubStart
            do {
                let state = try await embedded.ensureRunning()
                let strings = try embedded.connectionStrings(baseURL: state.url)
                return HubEndpoint(
                    listen: try ConnectionString(parsing: strings.listen), send: try ConnectionString(parsing: strings.full),
                    hubName: embedded.hubName, embedded: embedded)
            } catch {
                throw HubResolutionError(kind: .unreachable, description: "\(error)")
            }
        }
        let listen: ConnectionString
        do {
            listen = try ConnectionString(parsing: text)
        } catch {
            throw HubResolutionError(kind: .rejected, description: error.description)
        }
        var send = listen
        if let sendText = options.sendConnectionString {
            do {
                send = try ConnectionString(parsing: sendText)
            } catch {
                throw HubResolutionError(kind: .rejected, description: "the send connection string: \(error.description)")
            }
        }
        guard let hub = options.hub ?? listen.entityPath else {
            throw HubResolutionError(
                kind: .usage,
                description: "name the hub with --hub (or BREAKING_NEWS_HUB, or EntityPath in the connection string)")
        }
        return HubEndpoint(listen: listen, send: send, hubName: hub)
    }
}
