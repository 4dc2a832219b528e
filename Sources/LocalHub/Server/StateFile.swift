import Foundation
import LocalHubSupport
import Logging
import Synchronization

/// The hub's state file (`hub.json`), written once the server listens and rewritten when
/// what it says changes (the generation of the keys served).
final class StateFile: Sendable {
    let url: URL
    let logger: Logger
    /// The state written, or the changes made before it was (applied when it is).
    private let state = Mutex<(written: LocalHubState?, pending: [@Sendable (inout LocalHubState) -> Void])>((nil, []))

    init(url: URL, logger: Logger) {
        self.url = url
        self.logger = logger
    }

    func write(_ state: LocalHubState) {
        // Written under the lock, so that a later state is never overwritten by an earlier one.
        self.state.withLock { held in
            var state = state
            for change in held.pending { change(&state) }
            held = (state, [])
            save(state)
        }
    }

    /// Changes the state, and the file once it is written; a change that changes nothing
    /// leaves the file alone (clients and commands read it; nothing rewrites it needlessly).
    func update(_ change: @escaping @Sendable (inout LocalHubState) -> Void) {
        state.withLock { held in
            guard var state = held.written else {
                held.pending.append(change)
                return
            }
            change(&state)
            guard state != held.written else { return }
            held.written = state
            save(state)
        }
    }

    /// Removes the file when it is still this process's (a hub started since in the folder
    /// wrote its own).
    func removeIfOurs() {
        guard LocalHubState.read(url)?.pid == ProcessInfo.processInfo.processIdentifier else { return }
        try? FileManager.default.removeItem(at: url)
    }

    private func save(_ state: LocalHubState) {
        do {
            try state.write(to: url)
        } catch {
            logger.error("cannot write \(url.path): \(error)")
        }
    }
}
