/// Where writes wait for the writer: the routes, the dispatcher (a channel a service said is
/// gone), claim expiry and the scheduler all submit here, and the writer alone takes them.
final class WriteQueue: Sendable {
    struct Pending: Sendable {
        let request: WriteRequest
        /// Who waits for the result; nil for a write posted without waiting (`post`).
        let continuation: UnsafeContinuation<WriteResult, any Error>?
    }

    let queue = WorkQueue<Pending>()

    /// Applies a change; returns once it is durable and visible to reads.
    func submit(_ request: WriteRequest) async throws -> WriteResult {
        // Unchecked: the writer resumes each pending write exactly once (after its commit, on
        // a failed commit, or when the queue closes), and a checked continuation costs an
        // allocation per request.
        try await withUnsafeThrowingContinuation { continuation in
            if !queue.push(Pending(request: request, continuation: continuation)) {
                continuation.resume(throwing: EngineStopped())
            }
        }
    }

    /// Queues a change no one waits for (a claim renewed, a channel a service said is gone):
    /// the writer commits it in turn, with the writes around it; nothing is told of its
    /// result. Dropped when the queue is closed.
    func post(_ request: WriteRequest) {
        _ = queue.push(Pending(request: request, continuation: nil))
    }

    /// Takes no more; what waits is refused.
    func close() {
        for pending in queue.close() { pending.continuation?.resume(throwing: EngineStopped()) }
    }
}

/// The hub stops: no more writes or dispatches.
struct EngineStopped: Error, CustomStringConvertible {
    var description: String { "the hub is shutting down" }
}
