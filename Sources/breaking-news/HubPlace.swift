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
            "The PostgreSQL database of hub nodes (or BREAKING_NEWS_HUB_STORE; password from "
                + "BREAKING_NEWS_HUB_STORE_PASSWORD); default: the data folder's.",
            valueName: "postgres://user@host:port/database"))
    var store: String?

    /// The data folder named, or the local hub's.
    var folder: URL { data.map { URL(fileURLWithPath: $0) } ?? Paths().hubDirectory }

    /// `--store`, else `BREAKING_NEWS_HUB_STORE`; nil for the data folder.
    var storeURL: String? { HubStoreAccess.storeURL(store) }
}
