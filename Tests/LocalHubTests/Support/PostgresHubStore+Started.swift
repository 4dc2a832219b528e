import Foundation
import Logging

@testable import LocalHub

extension PostgresHubStore {
    /// A store on `url`, open, its pool running in a task of its own until the store is shut
    /// down or let go of: for tests that keep a store across scopes (`whileRunning` is the
    /// structured way, and what the hub and the commands use).
    static func started(
        url: String, password: String? = nil, node: String = UUID().uuidString.lowercased(), logger: Logger
    ) async throws -> PostgresHubStore {
        let store = try PostgresHubStore(url: url, password: password, node: node, logger: logger)
        let (pool, closed) = (store.pool, store.closed)
        Task { await PostgresHubStore.runPool(pool, until: closed) }
        try await store.open()
        return store
    }
}
