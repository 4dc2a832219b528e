import ServiceLifecycle

/// The push services' connections (`ExternalPushServices`), closed when the hub stops: after
/// the engine, which sends through them, has stopped, however the group ends.
struct PushProvidersService: Service {
    let providers: ExternalPushServices

    func run() async throws {
        // Cancelled (the group failed) or shut down gracefully: either way they close.
        try? await gracefulShutdown()
        await providers.shutdown()
    }
}
