import ArgumentParser
import Foundation
import NewsCommandLine
import Testing

@testable import breaking_news

/// The commands as the parser reads them: which command a line names, what its flags hold,
/// and which lines are refused (exit 2) before anything runs.
@Suite struct CommandParsingTests {
    private func parse(_ arguments: [String]) throws -> ParsableCommand {
        try BreakingNews.parseAsRoot(arguments)
    }

    /// The exit status a refused line ends with, as the programs map it.
    private func refusal(_ arguments: [String]) -> Int32? {
        do {
            _ = try parse(arguments)
            return nil
        } catch {
            return BreakingNews.exitCode(for: error) == .validationFailure ? ExitStatus.usage.rawValue : -1
        }
    }

    @Test func noArgumentsOpensTheUI() throws {
        let command = try parse([])
        let ui = try #require(command as? UICommand)
        #expect(ui.flags.mouse == false)
        #expect(ui.flags.arguments == [])
    }

    @Test func uiFlagsRoundTripToTheLeanProgram() throws {
        let arguments = [
            "--mouse", "--connection-string", "Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=b", "--hub", "news",
        ]
        let ui = try #require(try parse(["ui"] + arguments) as? UICommand)
        #expect(ui.flags.mouse)
        #expect(ui.flags.hub.hub == "news")
        // The lean program is handed exactly what it parses back to the same flags.
        let again = try UIFlags.parse(ui.flags.arguments)
        #expect(again.arguments == ui.flags.arguments)
        #expect(again.hub.options == ui.flags.hub.options)
    }

    @Test func hubFlagsBecomeOptions() throws {
        let flags = try HubFlags.parse(["--send-connection-string", "S", "--hub", "h"])
        #expect(flags.options.sendConnectionString == "S")
        #expect(flags.options.hub == "h")
        #expect(flags.options.connectionString == nil)
    }

    @Test func sendReadsCategoriesAndRawSends() throws {
        let send = try #require(
            try parse(["send", "Markets rally", "--category", "World", "--category", "Sports"]) as? SendCommand)
        #expect(send.text == "Markets rally")
        #expect(send.categories == ["World", "Sports"])
        let raw = try #require(try parse(["send", "--tags", "World || Sports", "--property", "messageParam=hi"]) as? SendCommand)
        #expect(raw.tags == "World || Sports")
        #expect(raw.properties == ["messageParam=hi"])
    }

    @Test(arguments: [
        ["send"],
        ["send", "text", "--tags", "World"],
        ["send", "--apple", "{}", "--property", "a=b"],
        ["send", "--tags", "x", "--property", "novalue"],
        ["token", "--expiry", "0"],
        ["hub", "serve", "--port", "70000"],
        ["hub", "serve", "--log-level", "loud"],
        ["hub", "serve", "--hub", "bad/name"],
        ["hub", "serve", "--max-hub-megabytes", "0"],
        ["no-such-command"],
        ["ui", "--unknown"],
    ])
    func refusedLinesExitWithUsage(_ arguments: [String]) {
        #expect(refusal(arguments) == ExitStatus.usage.rawValue)
    }

    @Test func everyCommandParses() throws {
        #expect(try parse(["subscribe", "World", "Sports"]) is SubscribeCommand)
        #expect(try parse(["categories", "--json"]) is CategoriesCommand)
        #expect(try parse(["log", "-f", "--category", "World", "--json"]) is LogCommand)
        #expect(try parse(["installation"]) is InstallationCommand)
        #expect(try parse(["token", "--expiry", "60"]) is TokenCommand)
        #expect(try parse(["hub", "status"]) is HubCommand.Status)
        #expect(try parse(["hub", "stop"]) is HubCommand.Stop)
        #expect(try parse(["hub", "connection-strings", "--json"]) is HubCommand.ConnectionStrings)
        let serve = try #require(try parse(["hub", "serve", "--port", "0", "--hub", "a", "--hub", "b"]) as? HubCommand.Serve)
        #expect(serve.hubs == ["a", "b"])
        #expect(serve.port == 0)
    }

    /// Issue 31: backups, restores and moves between stores.
    @Test func backupRestoreAndMigrateParse() throws {
        let backup = try #require(try parse(["hub", "backup", "news.backup", "--data", "/srv/hub"]) as? HubCommand.Backup)
        #expect(backup.file == "news.backup" && backup.place.data == "/srv/hub" && !backup.force)
        let restore = try #require(try parse(["hub", "restore", "news.backup", "--force"]) as? HubCommand.Restore)
        #expect(restore.file == "news.backup" && restore.force)
        let migrate = try #require(
            try parse(["hub", "migrate", "--to", "postgres://hub@db/news", "--deliveries"]) as? HubCommand.Migrate)
        #expect(migrate.toPostgres && migrate.deliveries && !migrate.force)
        let back = try #require(
            try parse(["hub", "migrate", "--store", "postgres://hub@db/news", "--to", "hub.sqlite"]) as? HubCommand.Migrate)
        #expect(!back.toPostgres && back.place.store == "postgres://hub@db/news")
        // Each needs its file or destination; --to takes no other URL.
        for arguments in [
            ["hub", "backup"], ["hub", "restore"], ["hub", "migrate"], ["hub", "migrate", "--to", "mysql://x/y"],
        ] {
            #expect(refusal(arguments) == ExitStatus.usage.rawValue, "\(arguments)")
        }
    }
}

/// `--help` of the UI programs names keys the manual's key table has (issue 50).
struct UIHelpTests {
    @Test func theKeysHelpNamesAreTheManuals() throws {
        let manual = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "../../docs/manual.md"),
            encoding: .utf8)
        for (said, row) in [
            ("Alt-Enter", "Alt-Enter"), ("Ctrl-P / Ctrl-N", "Ctrl-P/Ctrl-N"), ("Ctrl-X Ctrl-E", "Ctrl-X Ctrl-E"),
            ("y copies", "y"),
            ("? shows", "?"),
        ] {
            #expect(UIFlags.discussion.contains(said))
            #expect(manual.contains("| `\(row)` |"), "the key table has \(row)")
        }
        #expect(manual.contains("\"copyCommand\""))
    }
}
