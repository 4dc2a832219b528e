import Foundation
import Logging

extension PostgresServer {
    /// One server for every test of this process that needs a database, started by the
    /// first: each test makes a database of its own on it (`createDatabase`). Tests/run-tests
    /// stops it, and removes its folder, when the run ends.
    public static func shared() async throws -> PostgresServer {
        try await sharedServer.value
    }

    private static let sharedServer = Task { try await PostgresServer.start() }
}

extension TestHub {
    /// A logger that keeps quiet below errors, for stores and hubs made in tests.
    public static var quietLogger: Logger {
        var logger = Logger(label: "test-store")
        logger.logLevel = .error
        return logger
    }
}
