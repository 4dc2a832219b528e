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
