import Foundation
import HubTestSupport
import LocalHubSupport
import TestTiers
import Testing

/// `docs/hub.md`'s operator's path, run as written (issue 51): every `sh operator` block in
/// the order of the page, each in a new `bash -euo pipefail`, against this test's own
/// PostgreSQL (its superuser `postgres`, the role `hub` asked for its password, as Debian's
/// server does) and nginx; `sh operator-background` blocks (the nodes) run until the end.
///
/// What changes, and nothing else: the ports (5432, 47481, 47482, 443, 47474) become the
/// test's, the folders `/etc/breaking-news`, `/srv/hub`, `/etc/ssl/breaking-news` and
/// `/etc/nginx` become folders of the test; on PATH first, `runuser` runs its command as this
/// user (the cluster's superuser is `postgres`, PGHOST/PGPORT point at it), `nginx` is the
/// test's nginx (`-p`/`-c` added), and `breaking-news` is the built binary. The blocks run in a
/// folder holding `deploy/nginx/hub.conf` as the test's front substitutes it.
@Suite(.tags(.live, .postgres), .fullSuiteOnly, .serialized) struct OperatorDocsTests {
    struct Block {
        let line: Int
        let text: String
        let background: Bool
    }

    static var page: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/hub.md")
    }

    /// The page's marked blocks, in order.
    static func blocks(of text: String) -> [Block] {
        var blocks: [Block] = []
        var open: (line: Int, background: Bool, lines: [String])?
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if var block = open {
                if line.hasPrefix("```") {
                    blocks.append(
                        Block(line: block.line, text: block.lines.joined(separator: "\n"), background: block.background))
                    open = nil
                } else {
                    block.lines.append(String(line))
                    open = block
                }
            } else if line == "```sh operator" || line == "```sh operator-background" {
                open = (number + 1, line.hasSuffix("background"), [])
            }
        }
        return blocks
    }

    @Test func thePageHasTheStepsTheOperatorRuns() throws {
        let blocks = Self.blocks(of: try String(contentsOf: Self.page, encoding: .utf8))
        let text = blocks.map(\.text).joined(separator: "\n")
        // The steps the issue names, each a block that runs.
        for step in [
            "runuser -u postgres -- psql", "createdb -O hub", "hub serve", "--store-password-file", "nginx -t",
            "nginx -s reload", "hub status --data", "hub connection-strings --data", "--endpoint", "hub keys regenerate",
            "hub backup", "deploy/nginx/hub.conf", "worker_shutdown_timeout",
        ] {
            #expect(text.contains(step), "no marked block runs \(step)")
        }
        #expect(blocks.filter(\.background).count == 2)
        #expect(!text.contains("sudo"), "a minimal Debian has no sudo")
    }

    @Test(.timeLimit(.minutes(6))) func theOperatorsPathRunsAsWritten() async throws {
        try TestTier.requireFullSuite("the operator's path")
        let blocks = Self.blocks(of: try String(contentsOf: Self.page, encoding: .utf8))
        let server = try await PostgresServer.start(superuser: "postgres", passwordRoles: ["hub"])
        let root = TestHub.temporaryDirectory()
        var background: [ChildProcess.Running] = []
        var nginx: ChildProcess.Running?
        do {
            let folders = try Folders(root: root)
            let ports = try (
                nodes: [NginxFront.freePort(), NginxFront.freePort()], tls: NginxFront.freePort(), plain: NginxFront.freePort()
            )
            let substitutions: [(String, String)] = [
                ("5432", String(server.port)), ("47481", String(ports.nodes[0])), ("47482", String(ports.nodes[1])),
                ("47474", String(ports.plain)), ("443", String(ports.tls)),
            ]
            let paths: [(String, String)] = [
                ("/etc/nginx/conf.d", folders.nginx.appendingPathComponent("conf.d").path), ("/etc/nginx", folders.nginx.path),
                ("/etc/breaking-news", folders.etc.path), ("/etc/ssl/breaking-news", folders.ssl.path),
                ("/srv/hub", folders.srv.path),
            ]
            // The checkout's front, as the blocks install it, and the test's nginx, running.
            let front = try NginxFront.front(
                upstreams: ports.nodes.map { "127.0.0.1:\($0)" }, listen: "127.0.0.1:\(ports.plain)",
                tls: "127.0.0.1:\(ports.tls)", certificates: folders.ssl.path)
            try Data(front.utf8).write(to: folders.checkout.appendingPathComponent("deploy/nginx/hub.conf"))
            nginx = try await folders.startNginx()
            let environment = try folders.environment(server: server)
            var seen: Set<String> = []
            for block in blocks {
                let script = Self.substitute(block.text, ports: substitutions, paths: paths)
                if block.background {
                    let log = root.appendingPathComponent("background-\(block.line).log")
                    background.append(try folders.start(script, environment: environment, log: log))
                    continue
                }
                let outcome = try await folders.run(script, environment: environment)
                let why = "docs/hub.md line \(block.line) exited \(outcome.status):\n\(script)\n\(outcome.output)\n"
                try #require(outcome.status == 0, Comment(rawValue: why + folders.logs(root: root)))
                // What the blocks print is what the page says they print.
                if script.contains("hub status --data") {
                    seen.insert("status")
                    #expect(outcome.output.contains("node n1 of a cluster"), "\(outcome.output)")
                    #expect(outcome.output.contains("nodes heard from in the last 5 minutes: n1"), "\(outcome.output)")
                }
                if script.contains("connection-strings --data"), script.contains("news.example.com") {
                    seen.insert("strings")
                    #expect(outcome.output.contains("Endpoint=https://news.example.com/;"), "\(outcome.output)")
                }
            }
            #expect(seen == ["status", "strings"] && background.count == 2)
            let running = background.filter(\.isRunning).count
            #expect(running == 2, "a node stopped: \(folders.logs(root: root))")
        } catch {
            await Self.stop(background, nginx: nginx)
            await server.stop()
            throw error
        }
        await Self.stop(background, nginx: nginx)
        await server.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// `text` with the ports and folders of the page replaced by the test's: ports as whole
    /// numbers, folders as prefixes (the longest first), in one pass.
    static func substitute(_ text: String, ports: [(String, String)], paths: [(String, String)]) -> String {
        let all =
            paths.sorted { $0.0.count > $1.0.count }.map { (NSRegularExpression.escapedPattern(for: $0.0), $0.1) }
            + ports.map { ("(?<![0-9.])\($0.0)(?![0-9])", $0.1) }
        let pattern = try! NSRegularExpression(pattern: all.map { "(\($0.0))" }.joined(separator: "|"))
        var result = ""
        var last = text.startIndex
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            let range = Range(match.range, in: text)!
            result += text[last..<range.lowerBound]
            let group = (1...all.count).first { match.range(at: $0).location != NSNotFound }!
            result += all[group - 1].1
            last = range.upperBound
        }
        return result + text[last...]
    }

    static func stop(_ processes: [ChildProcess.Running], nginx: ChildProcess.Running?) async {
        for process in processes { process.signal(SIGTERM) }
        for process in processes { await process.exited() }
        if let nginx {
            nginx.signal(SIGQUIT)
            await nginx.exited()
        }
    }

    @Test func substitutionsReplaceWholePortsAndPrefixesOnly() {
        let text = "a 443 b :443/ c 4430 d 1443 e /etc/nginx/conf.d/x /etc/nginx/nginx.conf 127.0.0.1:5432 10.443.1.1"
        let out = Self.substitute(
            text, ports: [("443", "9001"), ("5432", "9002")], paths: [("/etc/nginx", "/N"), ("/etc/nginx/conf.d", "/C")])
        #expect(out == "a 9001 b :9001/ c 4430 d 1443 e /C/x /N/nginx.conf 127.0.0.1:9002 10.443.1.1")
    }
}

/// The test's stand-ins for a machine's folders, its wrappers, and how blocks run.
private struct Folders {
    let root: URL
    let etc: URL
    let srv: URL
    let ssl: URL
    let nginx: URL
    let bin: URL
    let checkout: URL
    let home: URL

    init(root: URL) throws {
        self.root = root
        (etc, srv, ssl, nginx, bin, checkout, home) = (
            root.appendingPathComponent("etc-breaking-news"), root.appendingPathComponent("srv-hub"),
            root.appendingPathComponent("etc-ssl"), root.appendingPathComponent("etc-nginx"), root.appendingPathComponent("bin"),
            root.appendingPathComponent("checkout"), root.appendingPathComponent("home")
        )
        for folder in [nginx.appendingPathComponent("conf.d"), bin, checkout.appendingPathComponent("deploy/nginx"), home] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        try Self.script(
            "runuser",
            """
            #!/bin/sh
            # As the docs' root would run it as postgres; here the test's own user is the cluster's.
            if [ "$1" = "-u" ] && [ "$3" = "--" ]; then shift 3; fi
            exec "$@"
            """, in: bin)
        try Self.script(
            "nginx",
            """
            #!/bin/sh
            exec \(NginxFront.binary) -p \(nginx.path)/ -c \(nginx.path)/nginx.conf -e \(nginx.path)/error.log "$@"
            """, in: bin)
        try FileManager.default.createSymbolicLink(
            at: bin.appendingPathComponent("breaking-news"), withDestinationURL: builtBinary())
    }

    static func script(_ name: String, _ text: String, in folder: URL) throws {
        let file = folder.appendingPathComponent(name)
        try Data((text + "\n").utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: file.path)
    }

    /// nginx as Debian leaves it: `conf.d/*.conf` included inside `http {}`, no
    /// `worker_shutdown_timeout` (a block adds it), nothing listening until a block installs
    /// the front; its pid, logs and temporary files here.
    func startNginx() async throws -> ChildProcess.Running {
        let folder = nginx.path
        let main = NginxFront.main(folder: folder, stock: true)
        try Data(main.utf8).write(to: nginx.appendingPathComponent("nginx.conf"))
        let process = try ChildProcess.start([
            NginxFront.binary, "-p", folder + "/", "-c", folder + "/nginx.conf", "-e", folder + "/error.log", "-g",
            "daemon off;",
        ])
        for descriptor in [process.standardOutput, process.standardError] { close(descriptor) }
        let pidFile = nginx.appendingPathComponent("nginx.pid").path
        try await eventually("nginx to write its pid", timeout: .seconds(30)) {
            FileManager.default.fileExists(atPath: pidFile) || !process.isRunning
        }
        try #require(process.isRunning, "nginx did not start: \(logs(root: root))")
        return process
    }

    func environment(server: PostgresServer) throws -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = "\(bin.path):\(environment["PATH"] ?? "/usr/bin:/bin")"
        environment["PGHOST"] = "127.0.0.1"
        environment["PGPORT"] = String(server.port)
        environment["PGUSER"] = server.superuser
        environment["HOME"] = home.path
        environment["BREAKING_NEWS_HOME"] = home.path
        for name in ["BREAKING_NEWS_HUB_STORE", "BREAKING_NEWS_HUB_STORE_PASSWORD", "BREAKING_NEWS_HUB_PORT", "PGPASSWORD"] {
            environment[name] = nil
        }
        return environment
    }

    /// `bash -euo pipefail -c script` in the checkout, its output and status; killed after 120 s.
    func run(_ script: String, environment: [String: String]) async throws -> (status: Int32, output: String) {
        let output = root.appendingPathComponent("block-output")
        try? FileManager.default.removeItem(at: output)
        let process = try ChildProcess.start(
            ["/bin/bash", "-c", "cd '\(checkout.path)' && exec > '\(output.path)' 2>&1 && set -euo pipefail && \(script)"],
            environment: environment)
        for descriptor in [process.standardOutput, process.standardError] { close(descriptor) }
        let deadline = ContinuousClock.now + .seconds(120)
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { process.signal(SIGKILL) }
        let status = await process.exited()
        return (status, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
    }

    /// `script` started in the background, its output into `log`.
    func start(_ script: String, environment: [String: String], log: URL) throws -> ChildProcess.Running {
        let process = try ChildProcess.start(
            ["/bin/bash", "-c", "cd '\(checkout.path)' && exec > '\(log.path)' 2>&1 && set -euo pipefail && exec \(script)"],
            environment: environment)
        for descriptor in [process.standardOutput, process.standardError] { close(descriptor) }
        return process
    }

    /// What the nodes and nginx wrote, for a failure's message.
    func logs(root: URL) -> String {
        let files =
            ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).filter { $0.hasSuffix(".log") }
            .map { root.appendingPathComponent($0) } + [nginx.appendingPathComponent("error.log")]
        return files.map { "--- \($0.lastPathComponent)\n" + ((try? String(contentsOf: $0, encoding: .utf8)) ?? "") }
            .joined(separator: "\n")
    }
}
