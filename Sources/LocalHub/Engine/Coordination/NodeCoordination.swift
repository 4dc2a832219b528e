import Foundation
import Logging
import NotificationHubs

/// What differs between a hub on a store of its own and one node of several sharing a
/// database, behind one protocol with an implementation for each (`SingleNode`,
/// `SharedDatabase`): catching up with other nodes, numbering deliveries and handing them to
/// the streams, what follows a commit, scheduled sends, and the node's background work. The engine's parts ask nothing
/// else about their situation, and test no flag of it: they ask the coordination what to do.
/// What a node alone does nothing about has that answer here, in the extension below.
protocol NodeCoordination: BuiltInPushHandOff {
    /// Catches the tables up with every write committed anywhere before this call (alone:
    /// the tables are the store's, nothing comes after them).
    func catchUp() async throws
    /// Where a batch resolved against the tables now is resolved: what its commit is checked
    /// at (`commit(_:resolvedAt:)`).
    func resolutionPoint() -> ResolutionPoint
    /// Whether a batch resolved without catching up first must be resolved again after
    /// catching up before it is committed (the recheck): alone, never; on a shared store when
    /// the tables it was resolved against may be behind and it wrote nothing, answered a write
    /// without writing, or refused one (`refusing`): an answer from tables behind is not
    /// checked at the commit.
    func mustResolveAgain(_ batch: WriteBatch, refusing: Bool) -> Bool
    /// Commits a batch's mutations; on a shared store only if nothing committed after the
    /// point it was resolved at would have resolved it otherwise (`moved`, nothing written:
    /// the writer catches up and resolves it again).
    func commit(_ batch: WriteBatch, resolvedAt point: ResolutionPoint) async throws -> CommitOutcome
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

    /// After a write batch's commit, with the change-log numbers it took (a shared store's)
    /// and the records it changed: `publish` sets its changes in the tables, at once. On a
    /// shared store the other nodes' changes numbered before them are read from the log
    /// after, and none of them sets a record over this commit's (`SharedDatabase.ChangeCursor`).
    func committed(changes: ClosedRange<Int64>?, records: [ChangedRecord], publish: () -> Void)
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
    /// the writer (a shared database; alone, the writer counts it).
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

/// Where a write batch was resolved, which its commit is checked at.
enum ResolutionPoint: Sendable, Equatable {
    /// Against the tables of a hub alone on its store, which are the store's.
    case ownStore
    /// Against tables that follow a shared change log through `position`: the commit is
    /// checked against what was committed anywhere after it (`Resolution`).
    case changeLog(position: Int64)
}

/// A node alone on its store: nothing to catch up with, no recheck, nothing but the store's
/// retention, and the room for scheduled sends counted by the writer.
extension NodeCoordination {
    func catchUp() async throws {}
    func resolutionPoint() -> ResolutionPoint { .ownStore }
    func mustResolveAgain(_ batch: WriteBatch, refusing: Bool) -> Bool { false }
    @discardableResult
    func retain(now: Date) async -> Int { 0 }
    func checkRoomForScheduled(hub: String) async throws {}
}

/// What a node's background work acts on.
struct NodeWork: Sendable {
    let writes: WriteQueue
    let streams: DeviceStreams
    let state: HubState
    /// Hands notifications to the dispatcher.
    let dispatch: @Sendable ([StoredNotification]) -> Void
}
