import ArgumentParser
import BreakingNewsKit
import Foundation

/// Where a command that acts on a hub directly (never over HTTP) finds it: its data folder,
/// or the PostgreSQL database of a cluster. One option group for `hub prune`, `backup`,
/// `restore`, `migrate` and `keys`.
struct HubPlace: ParsableArguments {
    @Option(help: "The hub's data folder (default: the local hub's).")
    var data: String?

    @Option(
        help: ArgumentHelp(
            "The PostgreSQL database of hub nodes (or BREAKING_NEWS_HUB_STORE); default: the data folder's.",
            valueName: "postgres://user@host:port/database"))
    var store: String?

    @Option(
        name: .customLong("store-password-file"),
        help: ArgumentHelp(
            "A file (mode 0600) whose first line is the database's password (else BREAKING_NEWS_HUB_STORE_PASSWORD).",
            valueName: "file"))
    var storePasswordFile: String?

    func validate() throws {
        if storePasswordFile != nil, storeURL == nil {
            throw ValidationError("--store-password-file goes with --store (or BREAKING_NEWS_HUB_STORE)")
        }
    }

    /// The database's password: the file's, else the environment's; nil when neither has one.
    func storePassword() throws -> String? {
        try HubCommand.Serve.secret(
            file: storePasswordFile, flag: "--store-password-file", environment: "BREAKING_NEWS_HUB_STORE_PASSWORD")
    }

    /// The data folder named, or the local hub's.
    var folder: URL { data.map { URL(fileURLWithPath: $0) } ?? Paths().hubDirectory }

    /// `--store`, else `BREAKING_NEWS_HUB_STORE`; nil for the data folder.
    var storeURL: String? { HubStoreAccess.storeURL(store) }
}
