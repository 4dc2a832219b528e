import Foundation
import LocalHubSupport

/// An exclusive lock on a data folder: one hub per folder. The kernel releases it when the
/// process ends, however it ends. A command that changes a stopped hub's files (`hub restore`)
/// holds it too, so no hub starts there meanwhile.
public final class DataDirectoryLock: Sendable {
    private let descriptor: Int32

    public init(directory: URL) throws {
        let path = directory.appendingPathComponent(LocalHubDefaults.lockFileName).path
        let fd = open(path, O_CREAT | O_RDWR, 0o600)
        guard fd >= 0 else {
            throw LocalHubStartError(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            let running = LocalHubState.read(directory.appendingPathComponent(LocalHubState.fileName))
            let detail = running.map { " (pid \($0.pid) at \($0.url))" } ?? ""
            throw LocalHubStartError(
                description: "another hub is already running on \(directory.path)\(detail); stop it with 'breaking-news hub stop'"
            )
        }
        descriptor = fd
    }

    public func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
