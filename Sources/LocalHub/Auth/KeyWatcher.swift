import Foundation
import LocalHubSupport
import Logging
import ServiceLifecycle

/// Follows the keys while the hub runs, so that `breaking-news hub keys` changes them without
/// a restart: a single hub watches its `keys.json`, a node of a cluster the keys kept in the
/// database (and writes them to its folder's `keys.json`, which the terminals of its machine
/// read). A change is served at once: the key ring is replaced, the streams opened with a key
/// that is gone are closed, and then the change is acknowledged (`acknowledge`: the state file
/// says the generation served; a node also notes it in the database), which is what the
/// command waits for. Keys that are not fit to sign with are refused, logged, and the keys
/// served stay.
struct KeyWatcher: Service {
    enum Source: Sendable {
        /// `keys.json` in the hub's data folder.
        case folder(URL)
        /// The keys kept in a shared store; `URL` is the folder whose `keys.json` copies them.
        case shared(any SharedHubStore, URL)
    }

    let ring: KeyRing
    let streams: DeviceStreams
    let source: Source
    let logger: Logger
    /// Called with each generation once it is served (the first at start).
    let acknowledge: @Sendable (Int64) async -> Void

    /// How often the key file is looked at (one `stat`), and the database asked.
    static let fileInterval: Duration = .milliseconds(200)
    static let sharedInterval: Duration = .seconds(1)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await acknowledge(ring.keys.generation)
            switch source {
            case .folder(let directory): await followFile(in: directory)
            case .shared(let store, let directory): await followStore(store, copyingTo: directory)
            }
        }
    }

    /// What identifies a version of the file: a new file (an atomic write) has a new inode.
    private struct FileSignature: Equatable {
        var inode: UInt64
        var size: Int64
        var modified: timespec

        static func == (a: Self, b: Self) -> Bool {
            a.inode == b.inode && a.size == b.size && a.modified.tv_sec == b.modified.tv_sec
                && a.modified.tv_nsec == b.modified.tv_nsec
        }

        init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modified = info.st_mtim
        }
    }

    private func followFile(in directory: URL) async {
        let path = directory.appendingPathComponent(HubKeys.fileName).path
        // Looked at once at start too: a change made while the hub was starting is served.
        var seen: FileSignature?
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.fileInterval)
            let now = FileSignature(path: path)
            guard now != seen, now != nil else { continue }
            seen = now
            do {
                await serve(try HubKeys.load(in: directory))
            } catch {
                logger.error("the keys changed but are not served: \(error); the hub keeps the keys it had")
            }
        }
    }

    private func followStore(_ store: any SharedHubStore, copyingTo directory: URL) async {
        var refused: Int64?
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.sharedInterval)
            do {
                guard let contents = try await store.storedKeys(), contents.generation != ring.keys.generation,
                    contents.generation != refused
                else { continue }
                let keys = HubKeys(contents: contents)
                do {
                    try keys.check(URL(fileURLWithPath: "the database's keys"))
                } catch {
                    refused = contents.generation
                    logger.error("the keys changed but are not served: \(error); the hub keeps the keys it had")
                    continue
                }
                try HubKeys.write(contents, to: directory.appendingPathComponent(HubKeys.fileName))
                await serve(keys)
            } catch {
                logger.debug("reading the keys kept in the database failed: \(error)")
            }
        }
    }

    /// Serves `keys`, closes the streams they no longer open, and acknowledges them.
    private func serve(_ keys: HubKeys) async {
        if ring.replace(with: keys) {
            let closed = streams.closeStreams(signedWithKeysNotIn: ring.isValid)
            logger.notice(
                "serving keys of generation \(keys.generation); closed \(closed) streams opened with keys that are gone")
        }
        await acknowledge(keys.generation)
    }
}
