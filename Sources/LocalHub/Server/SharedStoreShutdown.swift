import ServiceLifecycle

/// Closes a shared store's connections when the hub stops, after everything that uses it
/// (`LocalHubServer.storeServices`).
struct SharedStoreShutdown: Service {
    let store: any SharedHubStore

    func run() async throws {
        try? await gracefulShutdown()
        store.shutdown()
    }
}
