import Foundation
import LocalHubSupport
import NotificationHubs

/// This terminal's local side: where its files are, its categories, preferences (user
/// defaults), identity and received log. Opening it never touches the network.
public struct NewsProfile: Sendable {
    public let paths: Paths
    public let catalog: NewsCatalog
    /// The preferences: the selection and the arrival alerts.
    public let store: DefaultsStore
    /// Who this terminal is: installation id, device token, last registration.
    public let installations: InstallationStore
    /// The identity as it was when the profile was opened (`currentIdentity` reads it again).
    public let identity: DeviceIdentity
    public let log: InboxLog
    /// Set when a file of the home was corrupt and moved aside: `defaults.json`,
    /// `installation.json` or the read marks; says what was kept.
    public let warning: String?

    public init(paths: Paths = Paths(), catalog: NewsCatalog) throws {
        self.paths = paths
        self.catalog = catalog
        let installations = InstallationStore(url: paths.installationFile)
        // A corrupt defaults.json without its copy gets the selection last registered back.
        let store = DefaultsStore(url: paths.defaultsFile) { [installations, catalog] in
            let installation = installations.load().values
            let registered = installation.lastRegistration?.categories ?? []
            return DefaultsStore.Fallback(
                categories: catalog.categories.map(\.name).filter { registered.contains($0) },
                installationId: installation.installationId)
        }
        // Reading first moves a corrupt file aside before anything is saved (who this
        // terminal is first: the defaults' restore reads it).
        let installation = installations.load()
        let loaded = store.load()
        self.store = store
        self.installations = installations
        self.identity = try DeviceIdentity.load(from: installations, migrating: store)
        var warnings = [loaded.warning, installation.warning].compactMap { $0 }
        let log = InboxLog(url: paths.inboxFile)
        self.log = log
        warnings += [log.warning].compactMap { $0 }
        self.warning = warnings.isEmpty ? nil : warnings.joined(separator: "\n")
    }

    /// The identity as `installation.json` holds it now (another process, or a home restored
    /// from a copy, may have changed it); the opened one when the file holds none.
    public var currentIdentity: DeviceIdentity {
        DeviceIdentity.kept(in: installations.load().values) ?? identity
    }

    /// The last registration, as kept with the installation.
    public var lastRegistration: RegistrationRecord? { installations.load().values.lastRegistration }

    /// Prunes the received log to the days the preferences keep (`keepReceivedDays`; every
    /// message when unset): a window at launch, and `log`, do. Returns how many went; a log
    /// that cannot be rewritten is left as it is (the next try prunes it).
    @discardableResult
    public func pruneReceivedLog(now: Date = Date()) -> Int {
        (try? log.prune(keepingDays: store.load().values.keepReceivedDays, now: now)) ?? 0
    }

    /// The compose screen's unsent text, as it was when the UI last quit ("" for none).
    public var draft: String {
        guard let data = try? Data(contentsOf: paths.draftFile), data.count <= 65_536 else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Keeps `text` as the draft (atomically, owner only), or forgets the draft when empty.
    public func saveDraft(_ text: String) {
        if text.isEmpty {
            try? FileManager.default.removeItem(at: paths.draftFile)
        } else {
            try? FileManager.default.createDirectory(at: paths.configDirectory, withIntermediateDirectories: true)
            try? AtomicFile.write(Data(text.utf8), to: paths.draftFile, permissions: 0o600)
        }
    }

    /// The last sends of the home's compose screens.
    public var sentHistory: SentHistory { SentHistory(url: paths.sentHistoryFile) }

    /// The stored selection, in screen order (unknown names dropped).
    public var selectedCategories: [Category] {
        let names = Set(store.load().values.categories.map { $0.lowercased() })
        return catalog.categories.filter { names.contains($0.name.lowercased()) }
    }

    /// The registration core for `endpoint`, as the identity is now.
    public func subscriber(_ endpoint: HubEndpoint) -> Subscriber {
        Subscriber(
            store: store, installations: installations, identity: currentIdentity, catalog: catalog, endpoint: endpoint,
            afterRegistration: { endpoint in await retirePreviousDevice(endpoint) })
    }

    /// Stores `categories` as the selection and registers them where `endpoint` points; with
    /// no hub the selection is kept and the registration left pending. Never throws: every
    /// outcome is a record (registered, pending or failed) the screen shows.
    public func subscribe(_ categories: [Category], on endpoint: HubEndpoint?) async -> RegistrationRecord {
        let names = categories.map(\.name)
        guard let endpoint else {
            try? store.update { $0.categories = names }
            return RegistrationRecord(state: .pending, at: RegistrationRecord.now(), categories: names, hub: "", detail: "no hub")
        }
        do {
            return try await subscriber(endpoint).subscribe(names).record
        } catch {
            return RegistrationRecord(
                state: .failed, at: RegistrationRecord.now(), categories: names, hub: endpoint.hubURL, detail: "\(error)")
        }
    }

    public func publisher(_ endpoint: HubEndpoint) -> Publisher {
        Publisher(endpoint: endpoint, catalog: catalog)
    }

    /// This device's built-in push stream and inbox on `endpoint`, as the identity is now, with its
    /// claim's secret as `installation.json` holds it at each call.
    public func builtInPush(_ endpoint: HubEndpoint) -> BuiltInPushClient {
        let device = currentIdentity.deviceToken
        return BuiltInPushClient(endpoint: endpoint, device: device) { [installations] in
            let values = installations.load().values
            return values.deviceToken?.lowercased() == device.lowercased() ? values.claimSecret : nil
        }
    }

    /// The previous device token's stream and inbox, with its claim's secret.
    private func previousBuiltInPush(_ endpoint: HubEndpoint, _ values: InstallationStore.Values) -> BuiltInPushClient? {
        guard let previous = values.previousDeviceToken else { return nil }
        let secret = values.previousClaimSecret
        return BuiltInPushClient(endpoint: endpoint, device: previous) { secret }
    }

    /// Fetches what the hub delivered since the last message in the log and appends it,
    /// also what arrived for this terminal's previous device token while it had one.
    /// Returns the new entries.
    @discardableResult
    public func sync(_ endpoint: HubEndpoint) async throws(StreamFailure) -> [InboxEntry] {
        var added: [InboxEntry] = []
        if let previous = previousBuiltInPush(endpoint, installations.load().values) {
            do {
                added += try await fetch(previous, endpoint, fromStart: true)
            } catch  where error == .notRegistered {
                // The hub knows the old token no more: nothing can be waiting for it.
                _ = try? installations.update { Self.forgetPrevious(&$0) }
            }
        }
        added += try await fetch(builtInPush(endpoint), endpoint)
        return added
    }

    /// What the hub holds for `builtInPush`'s device after the log's resume point, or all of it
    /// `fromStart` (the previous token: the resume point is where the current one's stream
    /// stopped, and deliveries to the old token may lie before it; the log drops repeats).
    private func fetch(_ builtInPush: BuiltInPushClient, _ endpoint: HubEndpoint, fromStart: Bool = false)
        async throws(StreamFailure) -> [InboxEntry]
    {
        let resume = fromStart ? nil : log.resumePoint(hubName: endpoint.hubName)
        let batch = try await builtInPush.deliveries(after: resume?.seq ?? 0, epoch: resume?.epoch)
        do {
            // What expired before this terminal read it is said first, in its place.
            let gap = try batch.gap.flatMap {
                try log.appendGap($0, hub: endpoint.hubURL, hubName: endpoint.hubName, epoch: resume?.epoch)
            }
            let added = try log.append(batch.deliveries, hub: endpoint.hubURL, categoryOf: { catalog.category(of: $0)?.name })
            return (gap.map { [$0] } ?? []) + added
        } catch {
            throw .unreachable("cannot write \(log.url.path): \(error.localizedDescription)")
        }
    }

    /// Called once the hub holds the installation with this terminal's current token: nothing
    /// more can arrive for the previous one, so what did is fetched into the log and the
    /// previous token forgotten. Until that fetch succeeds, it is kept (and tried again).
    public func retirePreviousDevice(_ endpoint: HubEndpoint) async {
        let values = installations.load().values
        guard let previous = previousBuiltInPush(endpoint, values) else { return }
        do {
            _ = try await fetch(previous, endpoint, fromStart: true)
        } catch  where !error.isRefusal && error != .notRegistered {
            return
        } catch {
            // A hub without a built-in push service (Azure), or one that knows the old token
            // no more: nothing to fetch.
        }
        // Its claim goes too (nothing else holds it): the hub keeps nothing of the old token.
        _ = try? await endpoint.listenClient(retry: .none).releaseBuiltInPushDevice(
            previous.device, secret: values.previousClaimSecret)
        _ = try? installations.update { Self.forgetPrevious(&$0) }
    }

    /// Forgets the previous token and its claim's secret.
    static func forgetPrevious(_ values: inout InstallationStore.Values) {
        values.previousDeviceToken = nil
        values.previousClaimSecret = nil
    }
}
