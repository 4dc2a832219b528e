import BreakingNewsKit
import Foundation
import Testing

/// The home's last sends (`sent.json`, issue 50): bounded, shared by windows sending at once,
/// and a file that cannot be read set aside, never overwritten.
struct SentHistoryTests {
    @Test func keepsTheLastHundredOldestFirst() throws {
        let history = SentHistory(url: temporaryFolder().appendingPathComponent("sent.json"))
        #expect(history.load().isEmpty)
        for i in 1...130 {
            try history.append(
                SentMessage(text: "news \(i)", categories: ["World"], sentAt: Date(timeIntervalSince1970: Double(i))))
        }
        let kept = history.load()
        #expect(kept.count == SentHistory.limit)
        #expect(kept.first?.text == "news 31" && kept.last?.text == "news 130")
        #expect(kept.last?.sentAt == Date(timeIntervalSince1970: 130))
        let attributes = try FileManager.default.attributesOfItem(atPath: history.url.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test func windowsSendingAtOnceEachKeepTheirs() async throws {
        let history = SentHistory(url: temporaryFolder().appendingPathComponent("sent.json"))
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<40 {
                group.addTask { try? history.append(SentMessage(text: "w\(i)", categories: [], sentAt: Date())) }
            }
        }
        #expect(Set(history.load().map(\.text)) == Set((0..<40).map { "w\($0)" }))
    }

    @Test func anUnreadableFileIsSetAsideAndATextTooLongIsCut() throws {
        let folder = temporaryFolder()
        let url = folder.appendingPathComponent("sent.json")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("not json".utf8).write(to: url)
        let history = SentHistory(url: url)
        #expect(history.load().isEmpty)
        try history.append(SentMessage(text: "after", categories: ["World"], sentAt: Date()))
        #expect(history.load().map(\.text) == ["after"])
        let aside = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("sent.json.corrupt-") }
        #expect(aside.count == 1)
        #expect(try String(contentsOf: folder.appendingPathComponent(aside[0]), encoding: .utf8) == "not json")
        // Edited by hand past what a send carries: cut to it.
        try Data(#"[{"text":"\#(String(repeating: "x", count: 5000))","categories":[],"sentAt":"2026-12-03T10:00:00Z"}]"#.utf8)
            .write(to: url)
        #expect(history.load().first?.text.utf8.count == Publisher.maximumTextBytes)
    }
}
