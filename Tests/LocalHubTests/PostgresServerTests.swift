import Foundation
import HubTestSupport
import LocalHubSupport
import TestTiers
import Testing

@Suite(.tags(.live, .postgres), .fullSuiteOnly) struct PostgresServerTests {
    @Test func startsServesPausesResumesAndStopsWithoutLeavingAnything() async throws {
        let server = try await PostgresServer.start()
        let directory = server.directory
        let pid = server.pid
        do {
            #expect(pid > 0)
            #expect(server.isRunning)
            #expect(directory.path.hasPrefix(PostgresServer.folderPrefix))
            #expect(server.url == "postgres://hub@127.0.0.1:\(server.port)/postgres")

            let first = try await server.createDatabase("first_db")
            let second = try await server.createDatabase()
            #expect(first == server.url(database: "first_db"))
            #expect(first != second)
            #expect(try await server.psql("SELECT 1", database: first) == "1")
            // A new database is empty: no table of its own.
            let tables = try await server.psql(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database: second)
            #expect(tables == "0")
            try await server.psql("CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)", database: first)

            try await server.pause()
            #expect(!server.isRunning)
            #expect(!LocalProcess.isAlive(pid))
            await #expect(throws: (any Error).self) { try await server.psql("SELECT 1", database: first) }
            if case .success(let descriptor) = Loopback.connect(port: server.port) {
                close(descriptor)
                Issue.record("something accepts connections on port \(server.port) while the server is paused")
            }

            try await server.resume()
            #expect(server.isRunning)
            #expect(try await server.psql("SELECT n FROM kept", database: first) == "42")
        } catch {
            await server.stop()
            throw error
        }
        let resumed = server.pid
        await server.stop()
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        #expect(!LocalProcess.isAlive(resumed))
        #expect(!server.isRunning)
    }

    @Test func withStopsTheServerAlsoWhenTheBodyThrows() async throws {
        struct Planned: Error {}
        let seen = Seen()
        await #expect(throws: Planned.self) {
            try await PostgresServer.with { server in
                await seen.record(server.directory, server.pid)
                #expect(try await server.psql("SELECT 2") == "2")
                throw Planned()
            }
        }
        let (directory, pid) = try #require(await seen.value)
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        #expect(!LocalProcess.isAlive(pid))
    }
}

/// What the body of `PostgresServer.with` saw of its server.
private actor Seen {
    private(set) var value: (URL, Int32)?

    func record(_ directory: URL, _ pid: Int32) { value = (directory, pid) }
}
