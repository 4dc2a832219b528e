import Foundation

extension PostgresServer {
    /// Makes `role` (letters, digits, `_`), which logs in over TCP only with `password`
    /// (scram-sha-256), as Debian's server asks of every role, while the test's own superuser
    /// stays trusted; makes it the owner of a new database named `database` when given.
    /// Returns the URL of that database (or of `postgres`) for the role, without the password.
    @discardableResult
    public func addPasswordRole(_ role: String, password: String, database: String? = nil) async throws -> String {
        let plain = { (text: String) in
            !text.isEmpty && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
        }
        guard plain(role), plain(password), database.map(plain) ?? true else {
            throw PostgresServerError(description: "role, password and database must be plain names")
        }
        try await psql("CREATE ROLE \(role) LOGIN PASSWORD '\(password)'")
        if let database { try await psql("CREATE DATABASE \(database) OWNER \(role)") }
        // The first line that matches decides: the role's lines go before the trusting ones.
        let file = URL(fileURLWithPath: directory.appendingPathComponent("data/pg_hba.conf").path)
        let rules = try String(contentsOf: file, encoding: .utf8)
        let lines = "host all \(role) 127.0.0.1/32 scram-sha-256\nhost all \(role) ::1/128 scram-sha-256\n"
        try Data((lines + rules).utf8).write(to: file)
        try await psql("SELECT pg_reload_conf()")
        // The postmaster reads the file when it takes the signal: wait until the role is asked.
        let url = "postgres://\(role)@127.0.0.1:\(port)/\(database ?? "postgres")"
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            // -w: never ask for the password; a prompt is a refusal.
            let tried = try await tools.run(
                [tools.psql, "-X", "-w", "-q", "-d", url + "?connect_timeout=5", "-c", "SELECT 1"], asServer: false,
                in: directory.path)
            if tried.status != 0 { return url }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw PostgresServerError(description: "pg_hba.conf was not reloaded within 20 s")
    }
}
