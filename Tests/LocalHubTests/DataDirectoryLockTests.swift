import Foundation
import HubTestSupport
import Testing

@testable import LocalHub

/// One hub per data folder: a second lock on a folder is refused with the way out, and the
/// folder can be locked again once the first lets go.
struct DataDirectoryLockTests {
    @Test func aSecondHubOnAFolderIsRefusedUntilTheFirstLetsGo() throws {
        let folder = TestHub.temporaryDirectory()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let first = try DataDirectoryLock(directory: folder)
        let refusal = #expect(throws: LocalHubStartError.self) { try DataDirectoryLock(directory: folder) }
        #expect(refusal?.description.contains("another hub is already running on \(folder.path)") == true)
        #expect(refusal?.description.contains("breaking-news hub stop") == true)
        first.release()
        let again = try DataDirectoryLock(directory: folder)
        again.release()
    }

    @Test func aFolderThatCannotBeOpenedSaysSo() {
        let missing = TestHub.temporaryDirectory().appendingPathComponent("not-there")
        let refusal = #expect(throws: LocalHubStartError.self) { try DataDirectoryLock(directory: missing) }
        #expect(refusal?.description.contains("cannot open") == true)
    }
}
