import NotificationHubs

/// The built-in push service: APNs-shaped devices that are terminals. A delivery is handed
/// to the device's open streams at once and kept in the hub's delivery log, from which a
/// device that was offline resumes.
struct SandboxPushService: PushService {
    let streams: DeviceStreams

    var platform: Platform { .apns }
    var keepsDeliveryLog: Bool { true }

    func check(_ payload: [UInt8]) -> PushOutcome? {
        APNsPayloadRules.check(payload).map { .refused(name: $0.outcomeName, text: $0.outcomeText) }
    }

    /// Publishes to live streams before the dispatcher's commit (which then marks them
    /// recorded): a stream sees news as soon as it is numbered.
    func push(_ sends: [PushSend]) async -> [[PushOutcome]] {
        let written = streams.publish(sends.count == 1 ? sends[0].deliveries : sends.flatMap(\.deliveries), recorded: false)
        for job in written { try? await job.get() }
        return sends.map { Array(repeating: .delivered, count: $0.deliveries.count) }
    }
}
