import Foundation
import LocalHubSupport

/// An exclusive lock on a data folder: one hub per folder (a `FileLock` on its lock file).
/// The kernel releases it when the process ends, however it ends. A command that changes a
/// stopped hub's files (`hub restore`) holds it too, so no hub starts there meanwhile.
public final class DataDirectoryLock: Sendable {
    private let lock: FileLock

    public init(directory: URL) throws {
        do {
            lock = try FileLock(file: directory.appendingPathComponent(LocalHubDefaults.lockFileName), waiting: false)
        } catch {
            guard error.isHeld else { throw LocalHubStartError(description: error.description) }
            let running = LocalHubState.read(directory.appendingPathComponent(LocalHubState.fileName))
            let detail = running.map { " (pid \($0.pid) at \($0.url))" } ?? ""
            throw LocalHubStartError(
                description: "another hub is already running on \(directory.path)\(detail); stop it with 'breaking-news hub stop'"
            )
        }
    }

    public func release() { lock.release() }
}
