import Foundation

/// What the windows of one home share besides the log: the chosen categories, the last
/// registration, the read marks and the arrival alerts, as they are on disk now.
public struct SharedHomeState: Sendable, Hashable {
    public var selection: [Category]
    public var registration: RegistrationRecord?
    /// The terminal UI's bell and desktop notification, switched in any window.
    public var alerts: ArrivalAlerts = .off

    public init(
        selection: [Category], registration: RegistrationRecord?, alerts: ArrivalAlerts = .off
    ) {
        self.selection = selection
        self.registration = registration
        self.alerts = alerts
    }
}

/// Watches the files a home's windows and commands share (`defaults.json`, the read marks)
/// and yields their state when another process changed them: a subscribe from the command
/// line, marks moved in another window. It looks at their modification times every
/// `interval`; reading happens only when one changed.
public final class HomeWatcher: Sendable {
    public let changes: AsyncStream<SharedHomeState>
    private let task: Task<Void, Never>

    public init(profile: NewsProfile, interval: Duration = .milliseconds(250)) {
        let (changes, continuation) = AsyncStream<SharedHomeState>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.changes = changes
        let files = [profile.store.url, profile.log.readMarksFile]
        // Stamped now, before the window reads its state, so no change falls in between.
        let initial = files.map(Self.stamp)
        task = Task {
            var seen = initial
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                let now = files.map(Self.stamp)
                guard now != seen else { continue }
                seen = now
                let values = profile.store.load().values
                continuation.yield(
                    SharedHomeState(
                        selection: profile.catalog.categories.filter { category in
                            values.categories.contains { $0.lowercased() == category.name.lowercased() }
                        },
                        registration: values.lastRegistration,
                        alerts: values.arrivalAlerts))
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
