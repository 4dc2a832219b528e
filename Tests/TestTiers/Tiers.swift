import Foundation
import Testing

/// The tiers of the test suite (ARCHITECTURE.md, Testing). Unit tests and router tests
/// (the hub's routes in process, on the memory store) carry no tag: they make the fast tier.
/// A test that needs more is tagged `.live`, with `.postgres` or `.tmux` when it needs those
/// too, and carries `.fullSuiteOnly`. `make test` runs every test; `make test-fast` sets
/// `BREAKING_NEWS_TESTS=fast` and leaves out those. (The store conformance suite is tagged
/// `.postgres` alone: it runs on the memory and SQLite stores in both tiers, on PostgreSQL
/// only in the full suite. The soak test, `.live` and `.soak`, runs only in `make soak`.)
extension Tag {
    /// Needs a socket, TLS, a device stream, a crash or a second process: a hub or a peer
    /// listening on loopback, a PostgreSQL server, or a program run as a process.
    @Tag public static var live: Self
    /// Starts a PostgreSQL server, or makes databases on the one the run shares.
    @Tag public static var postgres: Self
    /// Drives the terminal UI in tmux.
    @Tag public static var tmux: Self
    /// Minutes long: `make soak` runs it (CI too), `make test` and `make test-fast` do not
    /// (it is enabled only with `BREAKING_NEWS_SOAK=1`).
    @Tag public static var soak: Self
}

extension Trait where Self == ConditionTrait {
    /// Run by `make test`, left out by `make test-fast`: goes with the tags above.
    public static var fullSuiteOnly: Self {
        .disabled(if: TestTier.fastOnly, "make test-fast runs unit and router tests only")
    }
}

/// Which tier this run is.
public enum TestTier {
    /// Whether only the fast tier runs (`BREAKING_NEWS_TESTS=fast`, as `make test-fast` sets it).
    public static let fastOnly = ProcessInfo.processInfo.environment["BREAKING_NEWS_TESTS"] == "fast"

    /// Keeps the tiers honest: in the fast tier, throws for what only the full suite starts.
    /// Every helper of the tests that listens on a socket, runs a process, a PostgreSQL server
    /// or tmux calls it first, so a test that uses one without `.live` and `.fullSuiteOnly`
    /// fails in `make test-fast`, naming what it started.
    public static func requireFullSuite(_ what: String) throws {
        guard !fastOnly else { throw LiveInFastTier(what: what) }
    }
}

/// A test of the fast tier started what only the full suite may (`TestTier.requireFullSuite`).
public struct LiveInFastTier: Error, CustomStringConvertible {
    public let what: String
    public var description: String {
        "a test of the fast tier started \(what): tag it .live (and .postgres or .tmux) with .fullSuiteOnly, "
            + "or make it a router test"
    }
}
