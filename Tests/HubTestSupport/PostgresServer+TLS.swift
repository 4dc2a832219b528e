import Foundation
import LocalHubSupport

extension PostgresServer {
    /// A server's TLS files: the CA that signed its certificate (what a client names in
    /// `sslrootcert`), the certificate (for `localhost` only, not 127.0.0.1, so that a check of
    /// the name can fail) and its key; all in the server's folder. The key exists only when
    /// the server was started with `tls`.
    public var tlsFiles: (authority: URL, certificate: URL, key: URL) {
        let folder = directory.appendingPathComponent("tls")
        return (
            folder.appendingPathComponent("ca.pem"), folder.appendingPathComponent("server.pem"),
            folder.appendingPathComponent("server.key")
        )
    }

    /// Makes a CA and a certificate it signs for `localhost` under `directory/tls`, readable by
    /// the server's user, its key by that user alone (PostgreSQL refuses a key others may read).
    static func makeTLSFiles(in directory: URL, tools: PostgresTools) throws {
        let folder = directory.appendingPathComponent("tls")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = { (name: String) in folder.appendingPathComponent(name).path }
        let steps: [[String]] = [
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
                "/CN=Breaking News test database CA", "-keyout", path("ca.key"), "-out", path("ca.pem"),
            ],
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
                "-keyout", path("server.key"), "-out", path("server.csr"),
            ],
            [
                "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-days", "2", "-extfile", path("names.cnf"), "-out", path("server.pem"),
            ],
        ]
        try Data("subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n".utf8).write(
            to: folder.appendingPathComponent("names.cnf"))
        for step in steps {
            let status = try ChildProcess.run(["/usr/bin/openssl"] + step)
            guard status == 0 else {
                throw PostgresServerError(description: "openssl \(step.prefix(2).joined(separator: " ")) failed (\(status))")
            }
        }
        for name in ["", "ca.pem", "server.pem", "server.key"] {
            let file = name.isEmpty ? folder.path : path(name)
            if let account = tools.serverAccount, chown(file, account.uid, account.gid) != 0 {
                throw PostgresServerError(description: "cannot give \(file) to postgres")
            }
        }
        _ = chmod(path("server.key"), 0o600)
        _ = chmod(folder.path, 0o755)
    }
}
