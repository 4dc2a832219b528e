import NotificationHubs

/// The device stream's connection as a pure state machine: events in, actions out, every
/// pair handled. It owns the resume point (the epoch of the hub's delivery log and the last
/// delivery kept), advances it only once what arrived is in the log, backs off (`Backoff`)
/// between tries, waits as long as a hub that throttles asks, and says why it is offline.
public struct StreamMachine: Sendable, Hashable {
    public enum State: Sendable, Hashable {
        case idle
        /// Opening the stream.
        case connecting
        /// The stream is open: reading it, or writing what it brought to the log.
        case live
        /// Waiting to try again; `quiet` when the wait repeats a reason already reported (a
        /// stopped hub looked for each second), so a try says nothing until its outcome.
        case waiting(quiet: Bool)
        /// Given up: the hub refused, or has no push service. Only a new receiver tries again.
        case gaveUp(OfflineReason)
        case stopped
    }

    public enum Event: Sendable, Hashable {
        case start
        /// The stream answered 200 and is open.
        case opened
        /// Deliveries arrived on the stream.
        case received([BuiltInPushDelivery])
        /// Those deliveries are in the log: the resume point may move past them.
        case appended([BuiltInPushDelivery])
        /// The hub told that its retention removed deliveries this device had not read.
        case gap(BuiltInPushGap)
        /// The gap is in the log: the resume point may move past it.
        case gapRecorded(BuiltInPushGap)
        /// The open stream ended as streams do, with nothing wrong: the hub closed it (the
        /// token that opened it expired, its key changed, the hub restarts) or it was due for
        /// a fresh token (`DeviceStream.renewAt`).
        case ended
        /// The stream could not be opened, or it was cut.
        case failed(StreamFailure)
        case retryTimerFired
        /// Try now (the user's `r`, a registration that succeeded, the hub seen back);
        /// `startingHub` starts a stopped embedded hub for this try.
        case retryNow(startingHub: Bool)
        case stop
    }

    public enum Action: Sendable, Hashable {
        /// Open the stream after `lastEventId` of `epoch`, starting the embedded hub first
        /// when `startingHub`.
        case open(lastEventId: Int64?, epoch: String?, startingHub: Bool)
        /// Read the open stream's next deliveries.
        case read
        /// Write these deliveries to the log, then send `appended`.
        case append([BuiltInPushDelivery])
        /// Write the gap to the log (in the delivery log `epoch`), then send `gapRecorded`.
        case recordGap(BuiltInPushGap, epoch: String?)
        /// Wait `seconds`, then send `retryTimerFired` (or `retryNow`, when told first).
        case wait(seconds: Double)
        case report(ConnectionStatus)
        /// Close the open stream, if any.
        case close
    }

    public private(set) var state: State = .idle
    /// The last delivery kept: where a new connection resumes.
    public private(set) var lastEventId: Int64?
    /// The delivery log `lastEventId` counts in.
    public private(set) var epoch: String?
    public private(set) var backoff: Backoff
    /// How often a stopped embedded hub is looked for (a file on this machine, no request).
    public var hubPollSeconds: Double = 1
    /// How long a device the hub does not know waits before trying again, when no
    /// registration says it may (a registration rings at once): short enough that a hub
    /// stopped meanwhile is said within seconds, never backed off.
    public var unregisteredRetrySeconds: Double = 5
    /// The longest `Retry-After` honoured.
    public static let maximumRetryAfter: Double = 300
    private var reported: ConnectionStatus?
    /// Tries left before an outage is said, after an open stream ended: a hub that restarts
    /// or stops is found so a moment later, and what is said is what it is.
    private var quietTries = 0

    public init(lastEventId: Int64? = nil, epoch: String? = nil, backoff: Backoff = Backoff()) {
        self.lastEventId = lastEventId
        self.epoch = epoch
        self.backoff = backoff
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.stopped, _):
            return []
        case (_, .stop):
            state = .stopped
            return [.close] + report(.stopped)
        case (.idle, .start):
            return connect(startingHub: false, quietly: false)
        case (.idle, _), (.gaveUp, _):
            return []
        case (.connecting, .opened):
            state = .live
            backoff.reset()
            quietTries = 0
            return report(.online) + [.read]
        case (.live, .received(let deliveries)):
            return deliveries.isEmpty ? [.read] : [.append(deliveries)]
        case (.live, .appended(let deliveries)):
            for delivery in deliveries {
                if delivery.epoch != epoch {
                    // A new delivery log: sequence numbers restart, so the resume point does too.
                    epoch = delivery.epoch
                    lastEventId = nil
                }
                lastEventId = max(lastEventId ?? 0, delivery.seq)
            }
            return [.read]
        case (.live, .gap(let gap)):
            return [.recordGap(gap, epoch: epoch)]
        case (.live, .gapRecorded(let gap)):
            lastEventId = max(lastEventId ?? 0, gap.through)
            return [.read]
        case (.live, .ended):
            // Opened again at once with a fresh token, saying nothing: still online. Should the
            // hub be stopping or restarting, one try more is quiet too, as after a cut stream.
            quietTries = 1
            return [.close] + connect(startingHub: false, quietly: true)
        case (.live, .failed(.unreachable)):
            // A stream that was open ended (a hub that restarts, or stops): tried again at
            // once and quietly, so what is said is what the tries find.
            state = .waiting(quiet: true)
            quietTries = 1
            return [.close, .wait(seconds: 0)]
        case (.connecting, .failed(let failure)), (.live, .failed(let failure)):
            return fail(failure)
        case (.waiting(let quiet), .retryTimerFired):
            return connect(startingHub: false, quietly: quiet)
        case (.waiting, .retryNow(let startingHub)):
            return connect(startingHub: startingHub, quietly: false)
        case (.connecting, _), (.live, _), (.waiting, _):
            // Not for this state: an event of a try that is over, or a retry while trying.
            return []
        }
    }

    private mutating func connect(startingHub: Bool, quietly: Bool) -> [Action] {
        state = .connecting
        return (quietly ? [] : report(.connecting)) + [.open(lastEventId: lastEventId, epoch: epoch, startingHub: startingHub)]
    }

    private mutating func fail(_ failure: StreamFailure) -> [Action] {
        let reason: OfflineReason
        let seconds: Double
        switch failure {
        case .unreachable where quietTries > 0, .unavailable where quietTries > 0:
            // A hub between two states (stopping, starting): once more, after a moment.
            quietTries -= 1
            state = .waiting(quiet: true)
            return [.close, .wait(seconds: backoff.fail())]
        case .unreachable(let detail):
            let delay = backoff.fail()
            state = .waiting(quiet: false)
            return [.close] + report(.reconnecting(seconds: delay, reason: detail)) + [.wait(seconds: delay)]
        case .throttled(let detail, let retryAfter):
            let delay = max(backoff.fail(), min(retryAfter ?? 0, Self.maximumRetryAfter))
            state = .waiting(quiet: false)
            return [.close] + report(.reconnecting(seconds: delay, reason: detail)) + [.wait(seconds: delay)]
        case .refused(let detail):
            state = .gaveUp(.refused(detail))
            return [.close] + report(.offline(.refused(detail)))
        case .noPushService:
            state = .gaveUp(.noPushService)
            return [.close] + report(.offline(.noPushService))
        case .notRegistered:
            (reason, seconds) = (.notRegistered, unregisteredRetrySeconds)
        case .hubStopped:
            (reason, seconds) = (.hubStopped, hubPollSeconds)
        case .unavailable(let detail):
            (reason, seconds) = (.unavailable(detail), backoff.fail())
        }
        // Offline, waiting: a try that ends the same way again says nothing new.
        let status = ConnectionStatus.offline(reason)
        state = .waiting(quiet: true)
        return [.close] + report(status) + [.wait(seconds: seconds)]
    }

    /// Reports `status` unless it is what was reported last.
    private mutating func report(_ status: ConnectionStatus) -> [Action] {
        guard status != reported else { return [] }
        reported = status
        return [.report(status)]
    }
}
