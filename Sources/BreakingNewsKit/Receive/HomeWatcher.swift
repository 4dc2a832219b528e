import Foundation

/// What the windows of one home share besides the log: the chosen categories, who this
/// terminal is and its last registration, the read marks and the arrival alerts, as they are
/// on disk now.
public struct SharedHomeState: Sendable, Hashable {
    public var selection: [Category]
    public var registration: RegistrationRecord?
    /// The terminal UI's bell and desktop notification, switched in any window.
    public var alerts: ArrivalAlerts = .off
    /// Who this terminal is now (nil when `installation.json` holds none).
    public var identity: DeviceIdentity?
    /// Set when reading found a file corrupt and moved it aside.
    public var warning: String?

    public init(
        selection: [Category], registration: RegistrationRecord?, alerts: ArrivalAlerts = .off,
        identity: DeviceIdentity? = nil, warning: String? = nil
    ) {
        self.selection = selection
        self.registration = registration
        self.alerts = alerts
        self.identity = identity
        self.warning = warning
    }

    /// The state of `profile`'s home as it is on disk now.
    public static func read(_ profile: NewsProfile) -> SharedHomeState {
        // A corrupt defaults.json is set aside and restored by the read (see `DefaultsStore`).
        let preferences = profile.store.load()
        let installation = profile.installations.load()
        let warnings = [preferences.warning, installation.warning].compactMap { $0 }
        return SharedHomeState(
            selection: profile.catalog.categories.filter { category in
                preferences.values.categories.contains { $0.lowercased() == category.name.lowercased() }
            },
            registration: installation.values.lastRegistration,
            alerts: preferences.values.arrivalAlerts,
            identity: DeviceIdentity.kept(in: installation.values),
            warning: warnings.isEmpty ? nil : warnings.joined(separator: "\n"))
    }
}

/// Watches the files a home's windows and commands share (`defaults.json`,
/// `installation.json`, the read marks) and yields their state when another process changed
/// them: a subscribe from the command line, marks moved in another window, a home restored
/// from a copy. It looks at their modification times every `interval`; reading happens only
/// when one changed.
public final class HomeWatcher: Sendable {
    public let changes: AsyncStream<SharedHomeState>
    private let task: Task<Void, Never>

    public init(profile: NewsProfile, interval: Duration = .milliseconds(250)) {
        let (changes, continuation) = AsyncStream<SharedHomeState>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.changes = changes
        // The restore note: a corrupt defaults.json another process (or another read of this
        // one) set aside and restored, said here too.
        let files = [profile.store.url, profile.installations.url, profile.log.readMarksFile, profile.store.restoreNoteURL]
        // Stamped now, before the window reads its state, so no change falls in between.
        let initial = files.map(Self.stamp)
        task = Task {
            var seen = initial
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                let now = files.map(Self.stamp)
                guard now != seen else { continue }
                let noted = now[3] != seen[3]
                seen = now
                var state = SharedHomeState.read(profile)
                if noted, let note = profile.store.restoreNote, state.warning?.contains(note) != true {
                    state.warning = [state.warning, note].compactMap { $0 }.joined(separator: "\n")
                }
                // A corrupt file moved aside (and restored, and noted) is not another change.
                if state.warning != nil { seen = files.map(Self.stamp) }
                continuation.yield(state)
            }
            continuation.finish()
        }
        continuation.onTermination = { [task] _ in task.cancel() }
    }

    public func stop() { task.cancel() }

    /// A file's modification time and size, to notice a change without reading it.
    private static func stamp(_ url: URL) -> [Int] {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return [] }
        return [Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec), Int(info.st_size), Int(info.st_ino)]
    }
}
