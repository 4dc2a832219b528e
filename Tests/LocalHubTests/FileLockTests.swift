import Foundation
import HubTestSupport
import LocalHubSupport
import Testing

/// The one file lock: of a file or of a folder, waited for or refused while held.
@Suite struct FileLockTests {
    @Test func aLockHeldElsewhereIsRefusedWhenNotWaitingAndTakenOnceReleased() throws {
        let file = TestHub.temporaryDirectory().appendingPathComponent("lock")
        let first = try FileLock(file: file, waiting: false)
        let refused = #expect(throws: FileLock.Failure.self) { try FileLock(file: file, waiting: false) }
        #expect(refused?.isHeld == true)
        first.release()
        first.release()
        let second = try FileLock(file: file, waiting: false)
        second.release()
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func aFolderIsLockedItselfAndAMissingOneIsNotMade() throws {
        let folder = TestHub.temporaryDirectory()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let held = try FileLock(folder: folder, waiting: true)
        #expect((try? FileLock(folder: folder, waiting: false)) == nil)
        held.release()
        let missing = folder.appendingPathComponent("missing")
        let failure = #expect(throws: FileLock.Failure.self) { try FileLock(folder: missing, waiting: false) }
        #expect(failure?.isHeld == false)
        #expect(!FileManager.default.fileExists(atPath: missing.path))
    }

    @Test func withExclusiveWaitsForTheHolder() async throws {
        let file = TestHub.temporaryDirectory().appendingPathComponent("shared.lock")
        let held = try FileLock(file: file, waiting: false)
        let order = Order()
        let waiter = Task.detached { FileLock.withExclusive(file) { order.note("body") } }
        try await Task.sleep(for: .milliseconds(200))
        order.note("release")
        held.release()
        await waiter.value
        #expect(order.notes == ["release", "body"])
    }
}

/// What happened, in order, from any thread.
private final class Order: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [String] = []
    var notes: [String] { lock.withLock { kept } }
    func note(_ what: String) { lock.withLock { kept.append(what) } }
}
