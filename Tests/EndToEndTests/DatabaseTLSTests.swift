import Foundation
import HubTestSupport
import LocalHubSupport
import TestTiers
import Testing

/// TLS to the database as the docs give it (issue 51), against a PostgreSQL server with TLS on
/// and a certificate for `localhost` from a CA of its own: `require` encrypts without a check,
/// `verify-ca` checks the CA, `verify-full` the CA and the name; what fails says so, exit 1.
@Suite(.tags(.live, .postgres), .fullSuiteOnly, .serialized) struct DatabaseTLSTests {
    @Test(.timeLimit(.minutes(3))) func eachSSLModeChecksWhatItSays() async throws {
        let server = try await PostgresServer.start(tls: true)
        do {
            try await Self.check(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    static func check(_ server: PostgresServer) async throws {
        let database = try await server.createDatabase()
        let name = String(database.split(separator: "/").last!)
        let authority = server.tlsFiles.authority.path
        let user = Command.freshHome()
        // Another CA, which signed nothing of the server's.
        let stranger = user.home.appendingPathComponent("stranger.pem")
        let key = user.home.appendingPathComponent("stranger.key")
        #expect(
            try ChildProcess.run(
                ["/usr/bin/openssl"] + [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                    "/CN=stranger", "-keyout", key.path, "-out", stranger.path,
                ]) == 0)
        func prune(_ host: String, _ query: String) async throws -> (status: Int32, stderr: String) {
            let url = "postgres://\(server.superuser)@\(host):\(server.port)/\(name)?\(query)"
            let run = try await user.run(["hub", "prune", "--store", url], timeout: 60)
            return (run.status, run.stderr)
        }
        for (host, query) in [
            ("127.0.0.1", "sslmode=require"), ("127.0.0.1", "sslmode=verify-ca&sslrootcert=\(authority)"),
            ("localhost", "sslmode=verify-full&sslrootcert=\(authority)"),
        ] {
            let ran = try await prune(host, query)
            #expect(ran.status == 0, "\(host) \(query): \(ran.stderr)")
        }
        // The name checked: by an address, which TLS is never given, verify-full is refused,
        // not quietly made verify-ca (it passed, unchecked, before).
        let byAddress = try await prune("127.0.0.1", "sslmode=verify-full&sslrootcert=\(authority)")
        #expect(
            byAddress.status == 1 && byAddress.stderr.contains("sslmode=verify-full checks the server's name"), "\(byAddress)")
        // The CA checked: one that signed nothing of the server's is refused, as are the system's roots.
        for query in ["sslmode=verify-ca&sslrootcert=\(stranger.path)", "sslmode=verify-full"] {
            let refused = try await prune("localhost", query)
            #expect(refused.status == 1 && refused.stderr.contains("TLS with the database"), "\(query): \(refused)")
        }
        // What the URL may not say.
        for (query, said) in [
            ("sslmode=sometimes", "sslmode 'sometimes' is not one of"),
            ("sslmode=require&application_name=x", "'application_name'"),
            ("sslrootcert=\(authority)", "sslrootcert needs sslmode"),
        ] {
            let refused = try await prune("127.0.0.1", query)
            #expect(refused.status != 0 && refused.stderr.contains(said), "\(query): \(refused)")
        }
        // A node over verify-full: its sessions are encrypted.
        try await HubProcess.with(
            directory: TestHub.temporaryDirectory(),
            arguments: [
                "--store",
                "postgres://\(server.superuser)@localhost:\(server.port)/\(name)?sslmode=verify-full&sslrootcert=\(authority)",
                "--node", "n1",
            ]
        ) { _ in
            let encrypted = try await server.psql(
                "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) "
                    + "WHERE a.datname = '\(name)' AND a.pid <> pg_backend_pid()")
            let counts = encrypted.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|").compactMap { Int($0) }
            #expect(counts.count == 2 && counts[1] > 0 && counts[0] == counts[1], "sessions encrypted, all: \(encrypted)")
        }
    }
}
