import Foundation
import Logging
import NotificationHubs

/// What differs between a hub on a store of its own and one node of several sharing a
/// database, behind one protocol with an implementation for each (`SingleNode`,
/// `SharedDatabase`): catching up with other nodes, numbering deliveries, what follows a
/// commit, scheduled sends, and the node's background work. The engine's parts ask nothing
/// else about their situation.
protocol NodeCoordination: Sendable {
    /// This node's name when it shares its store (`/metrics` labels), nil alone.
    var nodeName: String? { get }
    /// Whether the built-in push service hands deliveries to streams before their commit
    /// (alone), or streams read them from the store's feed after it (shared: the store numbers
    /// deliveries at commit, in the order every node sees them).
    var publishesBeforeCommit: Bool { get }

    /// Catches the tables up with every write committed anywhere before this call.
    func catchUp() async throws
    /// The change-log position the tables follow on a shared store (nil alone): a batch
    /// resolved against them is committed with it (`commit(_:resolvedAt:)`), so whether
    /// anything committed after it would have resolved the batch otherwise is checked there.
    func position() -> Int64?
    /// Commits a batch's mutations; on a shared store, with the `Resolution` it was resolved
    /// at, only if nothing committed after it would have resolved it otherwise (`moved`,
    /// nothing written: the writer catches up and resolves it again).
    func commit(_ mutations: [HubMutation], resolvedAt resolution: Resolution?) async throws -> CommitOutcome
    /// Whether the store answers, and a line naming it (`/healthz`).
    func storeHealth() async -> (healthy: Bool, line: String)
    /// Before the tables are loaded: what a shared store must note first.
    func prepare() async throws
    /// After they are loaded: the notifications this node dispatches now (left unfinished,
    /// or its own claims).
    func resume() async throws -> [StoredNotification]
    /// The node's background work, until cancelled.
    func run(_ node: NodeWork) async
    /// Retention of what only coordination keeps: on a shared store, the change log pruned
    /// up to what every live node has read (alone: nothing). How many entries went.
    @discardableResult
    func retain(now: Date) async -> Int

    /// After a write batch's commit, with the change-log numbers it took (a shared store's):
    /// `publish` sets its changes in the tables. Alone, at once; on a shared store, at once
    /// when the numbers come next in the change log, else the tables take them from the log,
    /// in commit order with every node's writes.
    func committed(changes: ClosedRange<Int64>?, publish: () -> Void)
    /// Scheduled sends waiting in memory for `hub`: how many and their bytes (a shared store
    /// keeps none in memory: the node that claims one when due fires it).
    func scheduledHeld(hub: String) -> (count: Int, bytes: Int)
    /// A scheduled send is durable and waits for its time.
    func scheduled(_ notification: StoredNotification)
    /// Takes a waiting scheduled send out (it fires or is cancelled); nil when it is not waiting.
    func takeScheduled(hub: String, id: String) -> StoredNotification?
    /// Scheduled sends a failed commit had taken out: they wait again.
    func commitFailed(unscheduled: [StoredNotification])
    /// Refuses a scheduled send the hub has no room for, where the room is counted outside
    /// the writer (a shared database).
    func checkRoomForScheduled(hub: String) async throws
    /// Cancels a scheduled send that has not fired (`WriteRefusal` not found otherwise).
    func cancelScheduled(hub: String, id: String, writes: WriteQueue) async throws

    /// Numbers the messages of the services that keep the delivery log (`logged`), in plan
    /// and message order; false when the engine stopped (`stopping`) while waiting; throws
    /// what no retry mends (numbers past 2^62).
    func number(_ plans: inout [DispatchPlan], logged: [PushServiceKind], stopping: () -> Bool) async throws -> Bool
    /// Whether delivery number `seq` has been given in this epoch (by any node).
    func hasNumbered(through seq: Int64) async throws -> Bool
    /// A dispatch's deliveries are committed: `published`, those handed to streams before the
    /// commit (alone); `written`, those the store wrote, numbered (a shared store numbers them).
    func recorded(published: [Delivery], written: [Delivery])
}

/// What a node's background work acts on.
struct NodeWork: Sendable {
    let writes: WriteQueue
    let streams: DeviceStreams
    let state: HubState
    /// Hands notifications to the dispatcher.
    let dispatch: @Sendable ([StoredNotification]) -> Void
}
