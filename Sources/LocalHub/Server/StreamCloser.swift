import ServiceLifecycle

/// Ends device streams as soon as shutdown starts, so the server can drain its requests.
struct StreamCloser: Service {
    let engine: HubEngine

    func run() async throws {
        try? await gracefulShutdown()
        engine.closeStreams()
    }
}
