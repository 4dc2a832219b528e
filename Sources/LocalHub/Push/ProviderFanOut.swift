/// How a real push service sends a dispatch's messages: one request per device, many at
/// once (the client caps what is in flight on its connection), each answer put back in the
/// place of its message.
enum ProviderFanOut {
    /// Tasks waiting on answers at once; beyond the client's own cap they only queue there.
    static let width = 1024

    static func push(
        _ sends: [PushSend], width: Int = width, _ send: @escaping @Sendable (PushSend, Delivery) async -> PushOutcome
    ) async -> [[PushOutcome]] {
        var outcomes = sends.map { Array(repeating: PushOutcome.delivered, count: $0.deliveries.count) }
        let work = sends.indices.flatMap { s in sends[s].deliveries.indices.map { (s, $0) } }
        await withTaskGroup(of: (Int, Int, PushOutcome).self) { group in
            var next = 0
            func start() {
                let (s, m) = work[next]
                next += 1
                group.addTask { (s, m, await send(sends[s], sends[s].deliveries[m])) }
            }
            while next < min(width, work.count) { start() }
            for await (s, m, outcome) in group {
                outcomes[s][m] = outcome
                if next < work.count { start() }
            }
        }
        return outcomes
    }
}
