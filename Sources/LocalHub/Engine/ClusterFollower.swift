import Foundation
import Logging
import NotificationHubs
import Synchronization

/// How one node follows what the others commit to a shared store: the change log into its
/// tables, the delivery feed into its device streams, and expired claims into its
/// dispatcher. Reads and writes on this node catch up with the change log first
/// (`changes.refresh()`), so they see every write acknowledged on any node.
final class ClusterFollower: Sendable {
    let store: any SharedHubStore
    /// Catches the tables up with the change log: shared by every caller waiting at once.
    let changes: Refresher
    private let changeCursor: Cursor
    private let feedCursor = Cursor()
    private let feedWake: AsyncStream<Void>.Continuation
    private let feedWakes: AsyncStream<Void>
    private let logger: Logger

    /// Seconds between polls when no wake-up came: the most a lost wake-up delays anything.
    static let pollInterval = 1.0
    /// Rows read from the change log or the delivery feed at a time.
    static let pageSize = 2000

    final class Cursor: Sendable {
        private let value = Mutex<Int64>(0)
        var position: Int64 {
            get { value.withLock { $0 } }
            set { value.withLock { $0 = newValue } }
        }
    }

    /// Where the changes read go: the node's tables (`attach`).
    final class Target: Sendable {
        let apply = Mutex<@Sendable ([StoredChange]) -> Void>({ _ in })
    }

    private let target: Target

    init(store: any SharedHubStore, logger: Logger) {
        self.store = store
        self.logger = logger
        let (cursor, target) = (Cursor(), Target())
        changeCursor = cursor
        self.target = target
        changes = Refresher {
            while true {
                let page = try await store.changes(after: cursor.position, limit: Self.pageSize)
                guard let last = page.last else { return }
                target.apply.withLock { $0 }(page)
                cursor.position = last.seq
                if page.count < Self.pageSize { return }
            }
        }
        (feedWakes, feedWake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Where following starts: the change log's head read before the tables were loaded
    /// (changes after it are read again, which sets the same rows), and the last delivery
    /// (streams read older ones from the store when they open).
    /// - Parameter apply: sets the changed rows in the node's tables.
    func start(changesFrom head: Int64, deliveriesFrom seq: Int64, apply: @escaping @Sendable ([StoredChange]) -> Void) {
        target.apply.withLock { $0 = apply }
        changeCursor.position = head
        feedCursor.position = seq
    }

    /// Reads the delivery feed soon: this node committed deliveries, or another did.
    func wakeFeed() { feedWake.yield() }

    /// Publishes the delivery feed to `publish` in number order, whenever woken, until cancelled.
    func runFeed(publish: @Sendable ([Delivery]) -> Void) async {
        for await _ in feedWakes {
            do {
                while true {
                    let page = try await store.deliveryFeed(after: feedCursor.position, limit: Self.pageSize)
                    guard let last = page.last else { break }
                    publish(page)
                    feedCursor.position = last.seq
                    if page.count < Self.pageSize { break }
                }
            } catch {
                // The next poll tries again from the same number: nothing is skipped.
                logger.warning("reading the delivery feed failed: \(error)")
            }
        }
    }

    /// Turns the store's wake-ups, and a poll every `pollInterval`, into catching up.
    func runWakeups() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await wakeup in self.store.wakeups() {
                    switch wakeup {
                    case .changes: self.changes.poke()
                    case .deliveries: self.wakeFeed()
                    case .reconnected:
                        self.changes.poke()
                        self.wakeFeed()
                    }
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(nanoseconds: UInt64(Self.pollInterval * 1_000_000_000))
                    self.changes.poke()
                    self.wakeFeed()
                }
            }
            await group.waitForAll()
        }
    }

    /// Claims notifications whose owner stopped renewing, and scheduled ones now due, every
    /// `pollInterval`; hands each to `dispatch`.
    func runClaims(dispatch: @Sendable ([StoredNotification]) -> Void) async {
        while !Task.isCancelled {
            do {
                let claimed = try await store.claimNotifications(now: Date(), limit: 256)
                if !claimed.isEmpty {
                    logger.info("took over \(claimed.count) notifications (expired claims or scheduled sends now due)")
                    dispatch(claimed)
                }
            } catch {
                logger.warning("renewing and taking claims failed: \(error)")
            }
            try? await Task.sleep(nanoseconds: UInt64(Self.pollInterval * 1_000_000_000))
        }
    }

    func stop() { feedWake.finish() }
}
