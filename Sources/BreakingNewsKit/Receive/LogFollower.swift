import Foundation
import Synchronization

/// Follows a home's received log, the one source every window shows: yields each entry after
/// the first `shownThrough` once, in log order, whichever process appended it (this one's
/// receiver, another window's, `log --follow` in a shell). Its `run()`, in its caller's task
/// group, looks every `interval`; it looks at once when told (`poll`) after this process
/// appended.
public final class LogFollower: Sendable {
    public let entries: AsyncStream<[InboxEntry]>
    private let core: Core
    private let interval: Duration

    public init(log: InboxLog, shownThrough: Int, interval: Duration = .milliseconds(250)) {
        let (entries, continuation) = AsyncStream<[InboxEntry]>.makeStream(bufferingPolicy: .unbounded)
        self.entries = entries
        core = Core(log: log, shown: shownThrough, continuation: continuation)
        self.interval = interval
    }

    /// Looks every `interval` until cancelled; then ends `entries`.
    public func run() async {
        while true {
            do { try await Task.sleep(for: interval) } catch { break }
            core.poll()
        }
        core.finish()
    }

    /// Yields what the log holds beyond what was yielded.
    public func poll() { core.poll() }

    /// Ends `entries`.
    public func stop() { core.finish() }

    deinit { stop() }

    private final class Core: Sendable {
        let log: InboxLog
        let state: Mutex<(shown: Int, continuation: AsyncStream<[InboxEntry]>.Continuation)>

        init(log: InboxLog, shown: Int, continuation: AsyncStream<[InboxEntry]>.Continuation) {
            self.log = log
            self.state = Mutex((shown, continuation))
        }

        /// Under one lock, so batches never overlap or come out of order.
        func poll() {
            log.catchUpIfGrown()
            state.withLock { state in
                let new = log.entries(after: state.shown)
                guard !new.isEmpty else { return }
                state.shown += new.count
                state.continuation.yield(new)
            }
        }

        func finish() { state.withLock { $0.continuation.finish() } }
    }
}
