import ServiceLifecycle

/// Starts the engine (its tables loaded from the store, what was left unfinished queued),
/// runs its writer and dispatcher, and stops them last, after the server has drained. The
/// server waits for the start before it listens (`waitUntilStarted`), so that a store that
/// runs as a service of the same group is running when the engine first reads it.
struct EngineService: Service {
    let engine: HubEngine
    private let started: AsyncStream<Void>
    private let startedContinuation: AsyncStream<Void>.Continuation

    init(engine: HubEngine) {
        self.engine = engine
        (started, startedContinuation) = AsyncStream.makeStream()
    }

    func run() async throws {
        // A start that fails ends the wait too: the waiter throws, the group ends with the error.
        defer { startedContinuation.finish() }
        try await engine.start()
        startedContinuation.yield()
        await withGracefulShutdownHandler {
            await engine.run()
        } onGracefulShutdown: {
            engine.stop()
        }
    }

    /// Returns once the engine has started; throws when it will not (its start failed, or the
    /// wait was cancelled). One waiter: the server's, or a test's that has no server.
    func waitUntilStarted() async throws {
        for await _ in started { return }
        throw CancellationError()
    }
}
