import Foundation

/// Where the product keeps its files: XDG locations, or everything under
/// `BREAKING_NEWS_HOME` when it is set (tests always set it).
public struct Paths: Sendable, Equatable {
    /// User defaults and settings.
    public let configDirectory: URL
    /// The received log and the embedded hub's folder.
    public let dataDirectory: URL

    public init(configDirectory: URL, dataDirectory: URL) {
        self.configDirectory = configDirectory
        self.dataDirectory = dataDirectory
    }

    /// The paths for an environment.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let home = environment["BREAKING_NEWS_HOME"], !home.isEmpty {
            let root = URL(fileURLWithPath: home)
            configDirectory = root.appendingPathComponent("config")
            dataDirectory = root.appendingPathComponent("data")
            return
        }
        let userHome = environment["HOME"].map { URL(fileURLWithPath: $0) } ?? FileManager.default.homeDirectoryForCurrentUser
        func xdg(_ name: String, _ fallback: String) -> URL {
            if let value = environment[name], value.hasPrefix("/") { return URL(fileURLWithPath: value) }
            return userHome.appendingPathComponent(fallback)
        }
        configDirectory = xdg("XDG_CONFIG_HOME", ".config").appendingPathComponent("breaking-news")
        dataDirectory = xdg("XDG_DATA_HOME", ".local/share").appendingPathComponent("breaking-news")
    }

    /// `defaults.json`: the user defaults store.
    public var defaultsFile: URL { configDirectory.appendingPathComponent("defaults.json") }
    /// `draft.txt`: the compose screen's unsent text, kept across quitting.
    public var draftFile: URL { configDirectory.appendingPathComponent("draft.txt") }
    /// The terminal's key bindings, colours and hyperlink setting.
    public var configFile: URL { configDirectory.appendingPathComponent("config.json") }

    /// `installation.json`: who this terminal is to the hub (installation id, device token,
    /// last registration), apart from the preferences.
    public var installationFile: URL { dataDirectory.appendingPathComponent("installation.json") }

    /// `inbox.jsonl`: every message this terminal received.
    public var inboxFile: URL { dataDirectory.appendingPathComponent("inbox.jsonl") }
    /// `sent.json`: the last sends of this home's compose screens, for ↑ to recall.
    public var sentHistoryFile: URL { dataDirectory.appendingPathComponent("sent.json") }
    /// The embedded hub's folder: database, keys, state file, log.
    public var hubDirectory: URL { dataDirectory.appendingPathComponent("hub") }
}
