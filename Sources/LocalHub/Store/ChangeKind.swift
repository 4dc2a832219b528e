/// What an entry of a shared store's change log names, and what a batch's reads are
/// checked against (`Resolution.Read`). The change log's `kind` column holds its code.
public enum ChangeKind: String, Sendable, Hashable, CaseIterable {
    case installation = "i"
    case registration = "r"
    /// A device of the built-in push service: its claim (`sandbox_device`).
    case builtInPushDevice = "s"

    /// The code the change log's `kind` column holds.
    public var code: String { rawValue }
}

/// A record the change log names: its kind, its hub (folded, as `HubDirectory` keys hubs) and
/// its id (a device token folded, as claims keep them). What a node notes of its own commits
/// that it applied ahead of the point it has read the log through (`SharedDatabase`).
public struct ChangedRecord: Sendable, Hashable {
    public let kind: ChangeKind
    public let hub: String
    public let id: String

    public init(kind: ChangeKind, hub: String, id: String) {
        self.kind = kind
        self.hub = hub.lowercased()
        self.id = kind == .builtInPushDevice ? id.lowercased() : id
    }
}
