import Foundation
import Synchronization

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
/// from a copy. Iterating `changes` is the work: it looks at their modification times every
/// `interval` in the iterating task, and reads only when one changed; it ends when that task
/// is cancelled.
public final class HomeWatcher: Sendable {
    private let profile: NewsProfile
    private let interval: Duration
    private let files: [URL]
    /// The stamps last seen, from the watcher's making on.
    private let seen: Mutex<[[Int]]>

    public init(profile: NewsProfile, interval: Duration = .milliseconds(250)) {
        self.profile = profile
        self.interval = interval
        // The restore note: a corrupt defaults.json another process (or another read of this
        // one) set aside and restored, said here too.
        files = [profile.store.url, profile.installations.url, profile.log.readMarksFile, profile.store.restoreNoteURL]
        // Stamped now, before the window reads its state, so no change falls in between.
        seen = Mutex(files.map(Self.stamp))
    }

    /// The home's state each time it changed; ends when the iterating task is cancelled.
    public var changes: AsyncStream<SharedHomeState> {
        AsyncStream { [self] in await self.nextChange() }
    }

    /// Waits for the next change; nil once cancelled.
    private func nextChange() async -> SharedHomeState? {
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return nil }
            let now = files.map(Self.stamp)
            let noted = seen.withLock { seen -> Bool? in
                guard now != seen else { return nil }
                defer { seen = now }
                return now[3] != seen[3]
            }
            guard let noted else { continue }
            var state = SharedHomeState.read(profile)
            if noted, let note = profile.store.restoreNote, state.warning?.contains(note) != true {
                state.warning = [state.warning, note].compactMap { $0 }.joined(separator: "\n")
            }
            // A corrupt file moved aside (and restored, and noted) is not another change.
            if state.warning != nil {
                let stamps = files.map(Self.stamp)
                seen.withLock { $0 = stamps }
            }
            return state
        }
        return nil
    }

    /// A file's modification time and size, to notice a change without reading it.
    private static func stamp(_ url: URL) -> [Int] {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return [] }
        return [Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec), Int(info.st_size), Int(info.st_ino)]
    }
}
