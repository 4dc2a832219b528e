import Foundation
import NotificationHubs

/// Why a subscription was refused before anything was stored.
public struct SubscribeError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// The result of one registration attempt.
public struct RegistrationOutcome: Sendable {
    public let record: RegistrationRecord
    /// The hub's error when the attempt did not succeed.
    public let error: HubError?
}

/// The registration core: stores the chosen categories, then registers this terminal's
/// installation (`platform: apns`, tags = categories, template `simpleAPNSTemplate`).
public struct Subscriber: Sendable {
    /// Where the selection is kept.
    public let store: DefaultsStore
    /// Where the outcome is kept, with who this terminal is.
    public let installations: InstallationStore
    public let identity: DeviceIdentity
    public let catalog: NewsCatalog
    public let endpoint: HubEndpoint
    /// Runs after each successful registration, with the endpoint it went to.
    let afterRegistration: @Sendable (HubEndpoint) async -> Void

    public init(
        store: DefaultsStore, installations: InstallationStore, identity: DeviceIdentity, catalog: NewsCatalog,
        endpoint: HubEndpoint, afterRegistration: @escaping @Sendable (HubEndpoint) async -> Void = { _ in }
    ) {
        self.store = store
        self.installations = installations
        self.identity = identity
        self.catalog = catalog
        self.endpoint = endpoint
        self.afterRegistration = afterRegistration
    }

    /// The categories of `names` in screen order; unknown names are refused.
    public func categories(_ names: [String]) throws(SubscribeError) -> [Category] {
        try catalog.resolve(names)
    }

    /// The installation this terminal registers for `categories`, lasting
    /// `RegistrationRenewal.lifetime` from `now` (as the iOS SDK names 90 days): a terminal
    /// gone for good stops being sent to, even on a hub that gives installations no expiry.
    public func installation(_ categories: [Category], now: Date = Date()) -> Installation {
        var installation = Installation(
            installationId: identity.installationId, platform: .apns, pushChannel: identity.deviceToken,
            tags: categories.map(\.tag),
            templates: [catalog.templateName: InstallationTemplate(body: catalog.templateBody)])
        installation.expirationTime = W3CDate.format(now.addingTimeInterval(RegistrationRenewal.lifetime))
        return installation
    }

    /// Stores the selection, then registers it. The selection is kept whatever the hub says.
    public func subscribe(_ names: [String]) async throws -> RegistrationOutcome {
        let chosen = try categories(names)
        try store.update { $0.categories = chosen.map(\.name) }
        return await register(chosen)
    }

    /// How a registration the user asked for retries a throttled or failing hub: briefly,
    /// while they wait for the answer.
    public static let userRetry = RetryPolicy(maximumRetries: 2, backoff: Backoff(base: 0.5, maximum: 4))

    /// One registration; its outcome is recorded with the installation: registered, pending
    /// (the hub could not be reached) or failed (the hub refused). `retry` is the only
    /// layer that retries within it.
    public func register(_ categories: [Category], retry: RetryPolicy = userRetry, now: Date = Date()) async
        -> RegistrationOutcome
    {
        let names = categories.map(\.name)
        var error: HubError?
        do throws(HubError) {
            let current = try await endpoint.current()
            let client = current.listenClient(retry: retry)
            // A terminal's token is the built-in push service's: claimed first, so that a hub
            // delivering to Apple never sends it there, even while this terminal is away.
            try await claim(with: client)
            try await client.createOrUpdateInstallation(installation(categories, now: now), claimSecret: currentSecret())
            await afterRegistration(current)
        } catch let hubError {
            error = hubError
        }
        let state: RegistrationRecord.State =
            error == nil ? .registered : (error!.isUnreachable || error!.isTransient ? .pending : .failed)
        // A refused key is said with its fix (which connection string to fetch), wherever the
        // record is shown: the UI's box, `categories`.
        let detail = error.map { error in
            error.status == 401 ? HubProblem.line(error, doing: .subscribing, embedded: endpoint.isEmbedded) : "\(error)"
        }
        let record = RegistrationRecord(
            state: state, at: W3CDate.format(now), categories: names, hub: endpoint.hubURL, detail: detail)
        _ = try? installations.update { values in
            // With the identity it is about: a file that lost it (removed meanwhile) gets it back.
            if values.installationId == nil {
                values.installationId = identity.installationId
                values.deviceToken = identity.deviceToken
            }
            values.lastRegistration = record
        }
        return RegistrationOutcome(record: record, error: error)
    }

    /// Removes this terminal from the hub: its installation, then the claim of its device
    /// token (and of the token it had before, if any), after which the hub keeps nothing of
    /// it (its deliveries and gap go with the claim). The registration is forgotten, so the
    /// next subscribe or launch registers anew; the identity, the selection and the received
    /// log stay. Returns whether the hub held a claim of this terminal.
    public func unregister(retry: RetryPolicy = userRetry) async throws(HubError) -> Bool {
        let client = try await endpoint.current().listenClient(retry: retry)
        do {
            try await client.deleteInstallation(id: identity.installationId)
        } catch  where error.status == 404 {
            // Not there: nothing to remove.
        }
        let kept = installations.load().values
        let secret = kept.deviceToken == identity.deviceToken ? kept.claimSecret : identity.claimSecret
        var released = try await client.releaseBuiltInPushDevice(identity.deviceToken, secret: secret)
        if let previous = kept.previousDeviceToken ?? identity.previousDeviceToken {
            released = try await client.releaseBuiltInPushDevice(previous, secret: kept.previousClaimSecret) || released
        }
        // The claim is gone, and its secret with it: the next claim is answered a new one.
        _ = try? installations.update { values in
            values.lastRegistration = nil
            if values.deviceToken == identity.deviceToken { values.claimSecret = nil }
        }
        return released
    }

    /// Claims this terminal's token with the secret kept for it, and keeps the secret the hub
    /// answers a first claim with. A 409 may be another window of this home that claimed the
    /// token a moment before: its secret is read again from `installation.json` (a few times,
    /// a moment apart) before the claim is given up as held by another terminal.
    func claim(with client: HubClient) async throws(HubError) {
        var secret = currentSecret() ?? identity.claimSecret
        for attempt in 0..<Self.claimAttempts {
            do {
                if case .claimed(let issued?) = try await client.claimBuiltInPushDevice(identity.deviceToken, secret: secret) {
                    try? installations.update { values in
                        if values.deviceToken == identity.deviceToken { values.claimSecret = issued }
                    }
                }
                return
            } catch  where error.status == 409 {
                guard attempt + 1 < Self.claimAttempts else { break }
                try? await Task.sleep(for: .milliseconds(250))
                secret = currentSecret() ?? secret
            }
        }
        throw HubError.status(
            409,
            detail:
                "this terminal's device token is claimed by another terminal (the hub does not know this terminal's claim "
                + "secret); give it a new token with 'breaking-news installation --new-device-token'")
    }

    /// Claims tried before a 409 is taken as another terminal's.
    static let claimAttempts = 4

    /// The secret `installation.json` holds for this terminal's token now.
    private func currentSecret() -> String? {
        let values = installations.load().values
        return values.deviceToken == identity.deviceToken ? values.claimSecret : nil
    }

    /// Registers, and while the hub cannot be reached keeps retrying with `backoff`
    /// (jittered, 1 s to 60 s), reporting each attempt. Ends when registered, refused, or
    /// cancelled. This loop is the one layer that retries: each attempt is a single call.
    public func registerUntilDone(_ categories: [Category], backoff initial: Backoff = Backoff()) -> AsyncStream<
        RegistrationOutcome
    > {
        AsyncStream { continuation in
            let task = Task {
                var backoff = initial
                while !Task.isCancelled {
                    let outcome = await register(categories, retry: .none)
                    continuation.yield(outcome)
                    guard outcome.record.state == .pending else { break }
                    // A hub that said when to come back (429, 503 with Retry-After) is waited for.
                    let wait = max(backoff.fail(), min(outcome.error?.retryAfter ?? 0, 300))
                    try? await Task.sleep(for: .seconds(wait))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
