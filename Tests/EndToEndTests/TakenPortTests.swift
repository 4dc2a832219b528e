import Foundation
import HubTestSupport
import LocalHubSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Two homes on one port: the second says at once who holds it and what to do, instead of
/// waiting for a hub that cannot listen there, or printing keys that hub would refuse.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct TakenPortTests {
    @Test func aSecondHomeOnATakenPortSaysWhoHoldsIt() async throws {
        let first = Command.freshHome()
        defer { _ = try? first.start(["hub", "stop"]) }
        let subscribed = try await first.run(["subscribe", "World"])
        #expect(subscribed.status == 0, "\(subscribed.stderr)")
        let firstHub = first.home.appendingPathComponent("data/hub")
        let holder = try #require(LocalHubState.read(firstHub.appendingPathComponent(LocalHubState.fileName)))
        let port = try #require(holder.port)

        // A second home, told to use the port the first one's hub holds.
        let second = Command.freshHome(extra: ["BREAKING_NEWS_HUB_PORT": String(port)])
        defer { _ = try? second.start(["hub", "stop"]) }
        func expectTheHolderNamed(_ result: Command.Result, _ command: String) {
            #expect(result.status == 3, "\(command): \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(command) printed \(result.stdout)")
            #expect(result.stderr.contains("port \(port)"), "\(command): \(result.stderr)")
            #expect(result.stderr.contains("pid \(holder.pid)"), "\(command): \(result.stderr)")
            #expect(result.stderr.contains(firstHub.resolvingSymlinksInPath().path), "\(command): \(result.stderr)")
            #expect(result.stderr.contains("BREAKING_NEWS_HUB_PORT"), "\(command): \(result.stderr)")
            #expect(result.stderrLines.count == 1, "\(command): \(result.stderr)")
        }
        expectTheHolderNamed(try await second.run(["subscribe", "World"]), "subscribe")
        expectTheHolderNamed(try await second.run(["hub", "status"]), "hub status")
        expectTheHolderNamed(try await second.run(["hub", "connection-strings"]), "hub connection-strings")
        // The second home started no hub of its own, and the first one's still answers.
        #expect(LocalHubState.read(second.home.appendingPathComponent("data/hub/\(LocalHubState.fileName)")) == nil)
        let status = try await first.run(["hub", "status"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.hasPrefix("running: pid \(holder.pid)"))

        // With a port of its own, the second home gets a hub of its own.
        var elsewhere = second
        elsewhere.environment["BREAKING_NEWS_HUB_PORT"] = "0"
        let own = try await elsewhere.run(["subscribe", "World"])
        #expect(own.status == 0, "\(own.stderr)")
    }

    /// A port that a connection of this machine holds as its own end: nothing listens there,
    /// so there is no one to name. The default port lies in the range the kernel gives such
    /// ends out from; the hub says what holds it and what to do, where it said only "in use".
    @Test func aPortAConnectionHoldsAsItsOwnEndIsSaidSo() async throws {
        try await SilentListeners.with(count: 1) { ports in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            try #require(fd >= 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(ports[0]).bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let connected = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    connect(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
                }
            }
            try #require(connected)
            // The port the kernel gave this connection's own end.
            let held = Int(UInt16(bigEndian: address.sin_port))
            let home = Command.freshHome()
            let served = try await home.run(["hub", "serve", "--port", String(held)], timeout: 30)
            #expect(served.status != 0, "\(served.stdout)")
            #expect(
                served.stderr.contains("port \(held) on 127.0.0.1 is in use though nothing listens there"), "\(served.stderr)")
            #expect(served.stderr.contains("add \(held) to net.ipv4.ip_local_reserved_ports"), "\(served.stderr)")
        }
    }
}
