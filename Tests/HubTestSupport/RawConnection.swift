import Foundation
import LocalHubSupport
import TestTiers

/// A plain TCP connection to a loopback port, for what no HTTP client sends: half a request,
/// a request that never ends, bytes the server must refuse.
public final class RawConnection {
    private let descriptor: Int32

    /// Connects to `127.0.0.1:port`.
    public init(port: Int) throws {
        try TestTier.requireFullSuite("a connection on a socket")
        switch Loopback.connect(port: port) {
        case .success(let descriptor): self.descriptor = descriptor
        case .failure(let error): throw TestHubError(description: error.description)
        }
    }

    deinit { close(descriptor) }

    /// Sends all of `text`.
    public func send(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw TestHubError(description: "send: \(String(cString: strerror(errno)))") }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// Reads until the server closes the connection or `timeout` seconds pass; returns what
    /// came and whether the connection was closed. Waits by sleeping, not by blocking a thread
    /// of the cooperative pool, which a hub in this process needs to answer.
    public func readUntilClosed(timeout: Double) async -> (text: String, closed: Bool) {
        await read(timeout: timeout) { _ in false }
    }

    /// Reads until what came contains `marker`, the server closes the connection, or
    /// `timeout` seconds pass.
    public func readUntil(containing marker: String, timeout: Double) async -> (text: String, closed: Bool) {
        await read(timeout: timeout) { $0.contains(marker) }
    }

    /// Reads until what came satisfies `done`, the server closes the connection, or
    /// `timeout` seconds pass.
    public func read(timeout: Double, until done: (String) -> Bool) async -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            guard deadline.timeIntervalSinceNow > 0 else { return (String(decoding: received, as: UTF8.self), false) }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 0) <= 0 {
                try? await Task.sleep(nanoseconds: 20_000_000)
                continue
            }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (String(decoding: received, as: UTF8.self), true) }
            received += buffer[..<count]
            let text = String(decoding: received, as: UTF8.self)
            if done(text) { return (text, false) }
        }
    }
}
