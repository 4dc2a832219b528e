import AsyncHTTPClient
import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

/// What an operator meets when the database will not do (issue 51): the built binary says the
/// cause and the fix in one line, with the exit code the docs give, and never the password.
@Suite(.tags(.live, .postgres), .fullSuiteOnly, .serialized) struct DatabaseStartErrorTests {
    @Test(.timeLimit(.minutes(3))) func eachStartUpErrorNamesItsCauseWithItsExitCode() async throws {
        let server = try await PostgresServer.shared()
        let role = "op_\(UInt32.random(in: 0...UInt32.max))"
        let url = try await server.addPasswordRole(role, password: "right_\(role)", database: "\(role)_news")
        let user = Command.freshHome()
        let file = user.home.appendingPathComponent("db-password")
        func password(_ text: String) throws {
            try Data("\(text)\n".utf8).write(to: file)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        }
        func serve(_ store: String, passwordFile: Bool = true) async throws -> (status: Int32, stderr: String) {
            let run = try await user.run(
                ["hub", "serve", "--port", "0", "--store", store] + (passwordFile ? ["--store-password-file", file.path] : []),
                timeout: 60)
            return (run.status, run.stderr)
        }

        // A wrong password (28P01): exit 4, the role named, the password never printed.
        try password("wrong_horse_battery")
        let wrong = try await serve(url)
        #expect(wrong.status == 4, "\(wrong)")
        #expect(wrong.stderr.contains("refused the password of role '\(role)' (28P01)"), "\(wrong.stderr)")
        #expect(!wrong.stderr.contains("wrong_horse_battery"))
        #expect(wrong.stderr.split(separator: "\n").filter { $0.contains("28P01") }.count == 1, "\(wrong.stderr)")
        // No password where one is asked: exit 4, and the flag that gives one.
        let none = try await serve(url, passwordFile: false)
        #expect(none.status == 4, "\(none)")
        #expect(none.stderr.contains("for a password and none was given") && none.stderr.contains("--store-password-file"))
        // The right password, a database that does not exist (3D000): exit 1, and how to make it.
        try password("right_\(role)")
        let missing = try await serve(url.replacingOccurrences(of: "/\(role)_news", with: "/\(role)_nowhere"))
        #expect(missing.status == 1, "\(missing)")
        #expect(missing.stderr.contains("'\(role)_nowhere' does not exist") && missing.stderr.contains("3D000"))
        #expect(missing.stderr.contains("createdb -O \(role) \(role)_nowhere"), "\(missing.stderr)")
        // Nothing listening (refused): exit 3, the address named.
        let port = try NginxFront.freePort()
        let refused = try await serve("postgres://\(role)@127.0.0.1:\(port)/\(role)_news")
        #expect(refused.status == 3, "\(refused)")
        #expect(refused.stderr.contains("nothing listens at 127.0.0.1:\(port) (connection refused)"), "\(refused.stderr)")
        // A name that does not resolve: exit 3.
        let unresolved = try await serve("postgres://\(role)@no-such-host.invalid:5432/\(role)_news")
        #expect(unresolved.status == 3 && unresolved.stderr.contains("'no-such-host.invalid' does not resolve"), "\(unresolved)")

        // The admin commands take the same file, and give the same codes.
        let prune = try await user.run(["hub", "prune", "--store", url, "--store-password-file", file.path], timeout: 60)
        #expect(prune.status == 0, "\(prune.stderr)")
        try password("wrong_horse_battery")
        for command in [
            ["hub", "prune"], ["hub", "keys"], ["hub", "backup", user.home.appendingPathComponent("b.sqlite").path],
        ] {
            let refusedAdmin = try await user.run(command + ["--store", url, "--store-password-file", file.path], timeout: 60)
            #expect(refusedAdmin.status == 4 && refusedAdmin.stderr.contains("28P01"), "\(command): \(refusedAdmin.stderr)")
        }
        let alone = try await user.run(["hub", "keys", "--store-password-file", file.path])
        #expect(alone.status == 2 && alone.stderr.contains("--store-password-file goes with --store"), "\(alone.stderr)")
    }

    /// A running node whose database goes away says why once in its log, where it said
    /// "answered nothing for 1 s", and the kind of problem in its /healthz text, which anyone
    /// may read: never the database's address, role or name.
    @Test(.timeLimit(.minutes(3))) func aRunningNodeNamesWhyItsDatabaseCannotBeUsed() async throws {
        try await PostgresServer.with { server in
            let database = try await server.createDatabase()
            let log = TestHub.temporaryDirectory().appendingPathComponent("node.log")
            try await HubProcess.with(
                directory: TestHub.temporaryDirectory(), arguments: ["--store", database, "--node", "n1"], log: log
            ) { node in
                try await server.pause()
                let reason = "nothing listens at 127.0.0.1:\(server.port) (connection refused)"
                var last = ""
                try await eventually("/healthz to name the kind of problem", timeout: .seconds(30), every: .milliseconds(200)) {
                    let answer = try? await Self.health(node.state.url)
                    last = answer.map { "\($0.status) \($0.text)" } ?? "no answer"
                    return answer?.status == 503 && answer?.text.contains("the database cannot be reached") == true
                }
                #expect(last.contains("the node's log says why") && !last.contains(String(server.port)), "healthz: \(last)")
                let written = try String(contentsOf: log, encoding: .utf8)
                #expect(written.components(separatedBy: "the database cannot be used: \(reason)").count == 2, "\(written)")
                try await server.resume()
                try await eventually("/healthz to answer 200 again", timeout: .seconds(30), every: .milliseconds(200)) {
                    (try? await Self.health(node.state.url))?.status == 200
                }
            }
        }
    }

    /// `GET /healthz`: its status and text.
    static func health(_ base: String) async throws -> (status: Int, text: String) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/healthz"), timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 65536)
        return (Int(response.status.code), String(buffer: body))
    }
}
