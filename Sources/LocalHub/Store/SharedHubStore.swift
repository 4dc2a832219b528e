import Foundation
import LocalHubSupport
import NotificationHubs

/// A store that several hub nodes use at once (PostgreSQL). The database is the truth;
/// each node follows it:
/// - installations, registrations and claimed devices through a change log, numbered in
///   commit order, that names what changed (the node reads the rows as they are now);
/// - deliveries through their numbers, which the store gives (`Delivery.seq` 0) in commit
///   order, so a node that has read a number has read every smaller one;
/// - notifications through claims: the node that accepts one dispatches it while it renews
///   its claim; a claim left to expire (the node died) is taken over by another node, and a
///   scheduled send that fell due is claimed by exactly one node.
/// Wake-ups (LISTEN/NOTIFY) only hasten the following: a lost one costs latency, never data.
public protocol SharedHubStore: HubStore {
    /// This node, as the owner of its claims.
    var node: String { get }
    /// The change log's last number.
    func changeHead() async throws -> Int64
    /// Changes numbered after `seq`, oldest first, each with the row as it is now; a change
    /// to a record `applied` names at its number or later is not read (`.applied`): the
    /// reader has the record as that commit left it, or newer. `ChangeLogPruned` when
    /// changes after `seq` were pruned: the reader must reload.
    func changes(after seq: Int64, limit: Int, applied: [ChangedRecord: Int64]) async throws -> [StoredChange]
    /// Applies mutations as `apply(_:)` does, only if nothing committed after the position
    /// they were resolved at would have resolved them otherwise (`Resolution`), checked under
    /// the lock of the counter that numbers the change log; `moved`, nothing written, if so.
    func apply(_ mutations: [HubMutation], resolvedAt resolution: Resolution) async throws -> CommitOutcome
    /// Notes that this node has read the change log through `position`, at `now`.
    func noteChangePosition(_ position: Int64, now: Date) async throws
    /// Prunes the change log: the changes every node noted within `liveWindow` before `now`
    /// has read (never the last one, so that a reader behind the point pruned through reads a
    /// row and learns it), and those a later change of the same row repeats; remembers the
    /// point pruned through. Nodes not noted within the window are forgotten and hold nothing
    /// back. How many changes went.
    func pruneChanges(now: Date, liveWindow: TimeInterval) async throws -> Int
    /// Moves up to `limit` of the oldest rows of an earlier form of the delivery log into the
    /// current one (read from both until then); how many moved, 0 once none is left.
    func copyEarlierDeliveries(limit: Int) async throws -> Int
    /// Every hub's deliveries numbered after `seq`, in number order.
    func deliveryFeed(after seq: Int64, limit: Int) async throws -> DeliveryFeedPage
    /// Renews this node's claims, then claims notifications whose claim expired and
    /// scheduled ones now due (those become `Enqueued`), oldest first.
    func claimNotifications(now: Date, limit: Int) async throws -> [StoredNotification]
    /// The notifications this node's name holds claims on, claimed again: called at start,
    /// when those are a previous process's (the same node restarted), whose dispatches died
    /// with it. (Renewing them without dispatching them would keep them from every node.)
    func takeBackClaims(now: Date) async throws -> [StoredNotification]
    /// Cancels a scheduled notification that has not fired; false when none was waiting.
    func cancelScheduled(hub: String, id: String, at: Date) async throws -> Bool
    /// Scheduled notifications waiting in one hub.
    func scheduledCount(hub: String) async throws -> Int
    /// Yields when another node committed changes or deliveries; ends when the store shuts down.
    func wakeups() -> AsyncStream<StoreWakeup>
    /// The hubs' keys kept in the database: those given for hubs that have none are added
    /// (and keys of a version-1 file upgraded); every node gets the same keys.
    func sharedKeys(adding proposed: LocalHubKeyFile.Contents) async throws -> LocalHubKeyFile.Contents
    /// The keys kept in the database as they are now; nil when none are.
    func storedKeys() async throws -> LocalHubKeyFile.Contents?
    /// Notes that this node serves the keys of `generation` (what `hub keys` waits for).
    func noteKeysGeneration(_ generation: Int64, now: Date) async throws
    /// Closes the connections.
    func shutdown()
}

/// The change log was pruned past a reader's position: changes it has not read are gone,
/// and only reloading every table from the store brings it up to date.
public struct ChangeLogPruned: Error, CustomStringConvertible, Sendable {
    /// Where the reader had read through.
    public let position: Int64
    /// Where the log was pruned through.
    public let prunedThrough: Int64

    public var description: String {
        "the change log was pruned through \(prunedThrough), past \(position), where this reader had read through"
    }
}

/// What a write batch was resolved against: a node's tables as they followed the change log
/// through `position`. A commit with it goes ahead only if no change after the position
/// names a record the batch read, and the hubs' limits leave room for every change after it.
public struct Resolution: Sendable {
    /// A record the batch read, by the change-log kind (`ChangeKind`),
    /// hub and id. A change to it after the position would have resolved the batch
    /// otherwise: one to another id of it in another case (the case rule), and when `exact`,
    /// one to the id itself (a PATCH, a DELETE, an ETag, a `created` time read it). A PUT of
    /// an installation is not `exact`: what it writes does not depend on what it replaces,
    /// beyond the room counted below.
    public struct Read: Sendable, Hashable {
        public var kind: ChangeKind
        public var hub: String
        public var id: String
        public var exact: Bool

        public init(kind: ChangeKind, hub: String, id: String, exact: Bool) {
            (self.kind, self.hub, self.id, self.exact) = (kind, hub, id, exact)
        }
    }

    /// The change-log position the tables followed when the batch was resolved.
    public var position: Int64
    /// How many changes after the position the hubs the batch grows can take and stay
    /// within their limits (each may add a record, and at most `HubWriter.largestChangeBytes`).
    public var room: Int64
    public var reads: [Read]

    public init(position: Int64, room: Int64 = .max, reads: [Read] = []) {
        (self.position, self.room, self.reads) = (position, room, reads)
    }
}

/// What a commit came to (`NodeCoordination.commit`).
public enum CommitOutcome: Sendable, Equatable {
    /// Written, with the numbers its changes took in the change log (a shared store's).
    case committed(ClosedRange<Int64>?)
    /// Nothing written: a change after the position it was resolved at would have resolved
    /// it otherwise (`Resolution`).
    case moved
}

/// What a wake-up says changed.
public enum StoreWakeup: Sendable, Equatable {
    case changes
    case deliveries
    /// The wake-up connection was lost and is back: anything may have changed meanwhile.
    case reconnected

    /// What a node sends at a commit: the kind, a colon and its name (`c:node1`).
    func payload(from node: String) -> String { (self == .changes ? "c:" : "d:") + node }

    /// What a payload says to the node `me`: nil for its own commits, which it follows as it
    /// makes them. A payload of a kind alone (`c`, from an earlier version) is another node's.
    init?(payload: String, me: String) {
        let kind = payload.prefix { $0 != ":" }
        if payload.count > kind.count, payload.dropFirst(kind.count + 1) == me[...] { return nil }
        self = kind == "c" ? .changes : .deliveries
    }
}

extension SharedHubStore {
    /// Every change numbered after `seq`, each read.
    public func changes(after seq: Int64, limit: Int) async throws -> [StoredChange] {
        try await changes(after: seq, limit: limit, applied: [:])
    }
}

/// One entry of the change log, with the row it names as it is now.
public struct StoredChange: Sendable {
    public enum Row: Sendable {
        /// A record the reader had applied at this change's number or later: not read.
        case applied(ChangedRecord)
        /// The installation now, nil when deleted (or unreadable).
        case installation(hub: String, id: String, Installation?)
        case registration(hub: String, id: String, StoredRegistration?)
        /// A claim of the built-in push service, as it is now: held (with its secret's digest,
        /// nil for a claim of before secrets) or let go.
        case claim(hub: String, device: String, claimed: Bool, secretDigest: String?)
    }

    public var seq: Int64
    public var row: Row
    /// The record the change names.
    public var record: ChangedRecord {
        switch row {
        case .applied(let record): record
        case .installation(let hub, let id, _): ChangedRecord(kind: .installation, hub: hub, id: id)
        case .registration(let hub, let id, _): ChangedRecord(kind: .registration, hub: hub, id: id)
        case .claim(let hub, let device, _, _): ChangedRecord(kind: .builtInPushDevice, hub: hub, id: device)
        }
    }
    /// The row did not pass the checks a request's would and was moved to the quarantine
    /// (it reads as deleted).
    public var quarantined = false
}

/// A page of the shared delivery log: the deliveries that passed their checks, and the
/// position read through (past rows that were skipped, so that no run of them stalls the feed).
public struct DeliveryFeedPage: Sendable {
    public var deliveries: [Delivery]
    /// The last position read; nil when nothing was.
    public var through: Int64?
    /// Rows read, skipped ones included.
    public var rowsRead: Int
}
