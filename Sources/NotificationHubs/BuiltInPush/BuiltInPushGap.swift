/// The hub's word that a device's deliveries numbered before `through` were removed by its
/// retention before the device read them: a stream resuming from before `through` gets this
/// event first (`event: gap`, its `id` the number after which the stream goes on), and an
/// inbox page a `gap` member. `expired` counts what the device lost when the hub knows it (it
/// resumed from before everything the hub removed for it).
public struct BuiltInPushGap: Sendable, Hashable {
    public var through: Int64
    public var expired: Int?

    public init(through: Int64, expired: Int?) {
        self.through = through
        self.expired = expired
    }

    /// The SSE event name.
    public static let event = "gap"

    public var json: JSONValue {
        .object(dropping: [("through", .number(String(through))), ("expired", expired.map { .number(String($0)) })])
    }

    public init(json: JSONValue) throws(BuiltInPushError) {
        guard case .number(let text)? = json["through"], let through = Int64(text), through >= 0 else {
            throw BuiltInPushError(description: "a gap needs its 'through' number")
        }
        var expired: Int?
        if case .number(let count)? = json["expired"] { expired = Int(count) }
        self.init(through: through, expired: expired)
    }

    /// The frame: `id` (so a client resuming after it skips the gap), `event: gap`, the JSON.
    public var serverSentEvent: String { "id: \(through)\nevent: \(Self.event)\ndata: \(json.text)\n\n" }

    /// The gap a client resuming after `since` must be told of, given what the hub removed
    /// for the device (numbered `from...through`, `count` of them); nil when it lost nothing.
    public static func told(since: Int64, removedFrom from: Int64, through: Int64, count: Int) -> BuiltInPushGap? {
        guard since < through else { return nil }
        return BuiltInPushGap(through: through, expired: since < from ? count : nil)
    }
}
