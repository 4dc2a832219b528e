/// Whether the database answers, and when an operation waiting for it must fail as
/// unavailable: a state machine with no I/O and no clock of its own. Events come in (an
/// operation started, answered or failed; a probe answered or failed; time passed, each with
/// its instant) and actions come out (start a probe, fail a waiting operation, the database
/// is reachable again); `Reachability` does what they say.
///
/// A slow database is not a down one: an operation that waits proves nothing (a lock, a full
/// pool, a busy disk or machine may hold it). So an operation fails as unavailable only once
/// nothing answered for `silence`: no operation finished and no probe got an answer. A probe
/// is asked for once an operation has waited `probeAfter` without an answer (one at a time,
/// at most one each `probeAfter`). A patient operation whose silence is over while a probe is
/// under way waits for the probe's word; one whose silence is over with no probe asked since
/// the last answer asks one, and waits for its word.
///
/// Once the database is found unreachable, operations that start wait only `impatience`,
/// and each asks for a probe at once; the first answer (a probe's or an operation's) makes it
/// reachable again. An operation already waiting when it is found unreachable keeps its
/// `silence`. None waits more than `longest`.
struct DatabaseWatchdog: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// How long operations wait, and when probes run.
    struct Timings: Sendable, Equatable {
        var silence: Duration = .seconds(5)
        var impatience: Duration = .seconds(1)
        var longest: Duration = .seconds(60)
        var probeAfter: Duration = .seconds(1)
        /// How long a probe may take: its word comes before an operation's `silence` is over.
        var probeTimeout: Duration { silence - probeAfter }

        static let standard = Timings()
    }

    /// One operation under watch, numbered by whoever starts it.
    struct OperationID: Hashable, Sendable, Comparable {
        let number: Int
        static func < (lhs: Self, rhs: Self) -> Bool { lhs.number < rhs.number }
    }

    enum Event: Sendable, Equatable {
        case operationStarted(OperationID, at: Instant)
        /// It succeeded, or the server refused it: the database answered either way.
        case operationAnswered(OperationID, at: Instant)
        /// It ended without an answer (a connection lost, a caller gone).
        case operationFailed(OperationID, at: Instant)
        case probeAnswered(at: Instant)
        /// The probe got no answer within `probeTimeout`.
        case probeFailed(at: Instant)
        case timePassed(Instant)
    }

    enum Action: Sendable, Equatable {
        /// Ask the server something; report `probeAnswered` or `probeFailed` within `probeTimeout`.
        case startProbe
        /// The operation stops waiting, as unavailable, for `reason`.
        case fail(OperationID, reason: String)
        /// The database found unreachable answered again.
        case markReachable
    }

    private struct Waiter {
        let started: Instant
        /// Started while the database was reachable: it waits `silence`, never `impatience`.
        let patient: Bool
    }

    let timings: Timings
    private(set) var reachable = true
    /// When the database last answered: an operation or a probe.
    private(set) var lastAnswer: Instant
    private(set) var probing = false
    private var probeStarted: Instant?
    private var waiting: [OperationID: Waiter] = [:]

    init(timings: Timings = .standard, now: Instant) {
        self.timings = timings
        lastAnswer = now
    }

    /// Whether `operation` is still waiting (started, neither ended nor failed).
    func isWaiting(_ operation: OperationID) -> Bool { waiting[operation] != nil }

    mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .operationStarted(let operation, let now):
            waiting[operation] = Waiter(started: now, patient: reachable)
            // Started while unreachable: its probe is asked for at once.
            if !reachable, let probe = startProbe(now) { return [probe] }
            return check(now)
        case .operationAnswered(let operation, let now):
            waiting[operation] = nil
            return answered(now)
        case .operationFailed(let operation, let now):
            waiting[operation] = nil
            return check(now)
        case .probeAnswered(let now):
            probing = false
            return answered(now)
        case .probeFailed(let now):
            probing = false
            return check(now)
        case .timePassed(let now):
            return check(now)
        }
    }

    /// The next instant at which time alone may change what `operation` is told (a probe
    /// to ask for, its wait over); nil once it is not waiting. At or before `now` when it
    /// waits for a probe's word.
    func nextCheck(for operation: OperationID) -> Instant? {
        guard let waiter = waiting[operation] else { return nil }
        let heard = max(waiter.started, lastAnswer)
        var next = min(waiter.started + timings.longest, heard + quiet(waiter))
        if !probing {
            let probeDue = max(heard + timings.probeAfter, (probeStarted ?? heard) + timings.probeAfter)
            next = min(next, probeDue)
        }
        return next
    }

    private func quiet(_ waiter: Waiter) -> Duration {
        waiter.patient || reachable ? timings.silence : timings.impatience
    }

    private mutating func answered(_ now: Instant) -> [Action] {
        lastAnswer = max(lastAnswer, now)
        guard !reachable else { return [] }
        reachable = true
        return [.markReachable]
    }

    /// What time has done to every waiting operation (in the order they were numbered).
    private mutating func check(_ now: Instant) -> [Action] {
        var actions: [Action] = []
        var wantsProbe = false
        for operation in waiting.keys.sorted() {
            guard let waiter = waiting[operation] else { continue }
            let heard = max(waiter.started, lastAnswer)
            let quiet = quiet(waiter)
            if now >= waiter.started + timings.longest {
                waiting[operation] = nil
                actions.append(
                    .fail(operation, reason: "the database did not finish the operation within \(Self.seconds(timings.longest))"))
            } else if now >= heard + quiet {
                if quiet == timings.silence {
                    // A probe under way may yet hear it; a patient operation waits for its word.
                    if probing { continue }
                    // None was asked since the last answer (the checks came late, on a busy
                    // machine): one is now, and its word awaited.
                    if probeStarted.map({ $0 < heard }) ?? true {
                        probing = true
                        probeStarted = now
                        actions.append(.startProbe)
                        continue
                    }
                }
                reachable = false
                waiting[operation] = nil
                actions.append(.fail(operation, reason: "the database answered nothing for \(Self.seconds(quiet))"))
            } else if now >= heard + timings.probeAfter {
                wantsProbe = true
            }
        }
        if wantsProbe, let probe = startProbe(now) { actions.append(probe) }
        return actions
    }

    /// `duration` as the messages say it: "5 s", "0.5 s".
    static func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        if attoseconds == 0 { return "\(whole) s" }
        return "\(Double(whole) + Double(attoseconds) / 1e18) s"
    }

    /// A probe, unless one is under way or the last started less than `probeAfter` ago.
    private mutating func startProbe(_ now: Instant) -> Action? {
        guard !probing, probeStarted.map({ now >= $0 + timings.probeAfter }) ?? true else { return nil }
        probing = true
        probeStarted = now
        return .startProbe
    }
}
