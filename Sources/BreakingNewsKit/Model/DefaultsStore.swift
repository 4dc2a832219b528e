import Foundation
import LocalHubSupport
import NotificationHubs

/// The outcome of the last registration attempt, as kept in the user defaults.
public struct RegistrationRecord: Sendable, Hashable {
    public enum State: String, Sendable, Hashable {
        /// The hub accepted the installation with these categories.
        case registered
        /// The hub could not be reached; the selection is kept and registration retried.
        case pending
        /// The hub refused the installation (auth, input).
        case failed
    }

    public var state: State
    /// When this state was reached (W3C date).
    public var at: String
    public var categories: [String]
    /// The hub it concerns, `<service root><hub>`.
    public var hub: String
    public var detail: String?

    public init(state: State, at: String, categories: [String], hub: String, detail: String? = nil) {
        self.state = state
        self.at = at
        self.categories = categories
        self.hub = hub
        self.detail = detail
    }

    /// The current time as records store it.
    public static func now() -> String { W3CDate.format(Date()) }

    var json: JSONValue {
        .object(dropping: [
            ("state", .string(state.rawValue)), ("at", .string(at)), ("categories", .strings(categories)), ("hub", .string(hub)),
            ("detail", detail.map(JSONValue.string)),
        ])
    }

    init?(json: JSONValue) {
        guard let state = json["state"]?.stringValue.flatMap(State.init(rawValue:)), let at = json["at"]?.stringValue else {
            return nil
        }
        self.init(
            state: state, at: at, categories: json["categories"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            hub: json["hub"]?.stringValue ?? "", detail: json["detail"]?.stringValue)
    }
}

/// The JSON user-defaults store, `defaults.json`: the preferences — the tutorial's
/// `BreakingNewsCategories` and the arrival alerts. Keys it does not know are kept. Writes are
/// atomic; a corrupt file is moved aside, never overwritten. Who this terminal is lives apart,
/// in `InstallationStore`, so that a corrupt preferences file never costs it; earlier versions
/// kept it here, and the fields that held it are read once to move it (`DeviceIdentity.load`).
public final class DefaultsStore: Sendable {
    /// The tutorial's key for the chosen categories.
    public static let categoriesKey = "BreakingNewsCategories"
    static let installationIdKey = "installationId"
    static let deviceTokenKey = "deviceToken"
    static let previousDeviceTokenKey = "previousDeviceToken"
    static let registrationKey = "lastRegistration"
    static let arrivalAlertsKey = "arrivalAlerts"
    static let keepReceivedDaysKey = "keepReceivedDays"

    public let url: URL
    private let file: KeptJSONObject

    public init(url: URL) {
        self.url = url
        self.file = KeptJSONObject(url: url, consequence: "the selection starts empty")
    }

    /// What the store holds.
    public struct Values: Sendable, Hashable {
        public var categories: [String]
        /// The terminal UI's bell and desktop notification on arrival (off when absent).
        public var arrivalAlerts: ArrivalAlerts = .off
        /// How many days the received log keeps a message once it is read; nil (absent or 0):
        /// everything, for good. An unread message is always kept.
        public var keepReceivedDays: Int?
        /// Who this terminal was, as earlier versions kept it here: read once to move it to
        /// `installation.json`, then removed.
        public var installationId: String?
        public var deviceToken: String?
        public var previousDeviceToken: String?
        public var lastRegistration: RegistrationRecord?
        /// Members this version does not use, kept as they were.
        var others: [(String, JSONValue)] = []

        public init(
            categories: [String] = [], installationId: String? = nil, deviceToken: String? = nil,
            lastRegistration: RegistrationRecord? = nil
        ) {
            self.categories = categories
            self.installationId = installationId
            self.deviceToken = deviceToken
            self.lastRegistration = lastRegistration
        }

        /// Whether it holds an identity of an earlier version.
        var holdsIdentity: Bool {
            installationId != nil || deviceToken != nil || previousDeviceToken != nil || lastRegistration != nil
        }

        public static func == (a: Values, b: Values) -> Bool {
            a.categories == b.categories && a.installationId == b.installationId && a.deviceToken == b.deviceToken
                && a.previousDeviceToken == b.previousDeviceToken && a.lastRegistration == b.lastRegistration
                && a.arrivalAlerts == b.arrivalAlerts && a.keepReceivedDays == b.keepReceivedDays
                && JSONValue.object(a.others) == JSONValue.object(b.others)
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(categories)
            hasher.combine(installationId)
        }
    }

    /// The result of reading the store.
    public struct Loaded: Sendable {
        public var values: Values
        /// Set when the file was corrupt: what happened and where the old file went.
        public var warning: String?
    }

    /// Reads the store. A missing file is empty; a corrupt one is renamed
    /// `defaults.json.corrupt-<time>` and reported in `warning`, and the app starts with no selection.
    public func load(now: Date = Date()) -> Loaded {
        let (members, warning) = file.read(now: now)
        return Loaded(values: Self.values(from: members), warning: warning)
    }

    static func values(from members: [(String, JSONValue)]) -> Values {
        var values = Values()
        for (key, value) in members {
            switch key {
            case categoriesKey: values.categories = value.arrayValue?.compactMap(\.stringValue) ?? []
            case installationIdKey: values.installationId = value.stringValue
            case deviceTokenKey: values.deviceToken = value.stringValue
            case previousDeviceTokenKey: values.previousDeviceToken = value.stringValue
            case registrationKey: values.lastRegistration = RegistrationRecord(json: value)
            case arrivalAlertsKey: values.arrivalAlerts = ArrivalAlerts(json: value)
            case keepReceivedDaysKey:
                if case .number(let text) = value, let days = Int(text), days > 0 { values.keepReceivedDays = days }
            default: values.others.append((key, value))
            }
        }
        return values
    }

    /// Writes the store atomically (temporary file, then rename).
    public func save(_ values: Values) throws {
        try file.write(
            [
                (Self.categoriesKey, .strings(values.categories)),
                (Self.installationIdKey, values.installationId.map(JSONValue.string)),
                (Self.deviceTokenKey, values.deviceToken.map(JSONValue.string)),
                (Self.previousDeviceTokenKey, values.previousDeviceToken.map(JSONValue.string)),
                (Self.registrationKey, values.lastRegistration?.json),
                (Self.arrivalAlertsKey, values.arrivalAlerts.isOff ? nil : values.arrivalAlerts.json),
                (Self.keepReceivedDaysKey, values.keepReceivedDays.map { .number(String($0)) }),
            ] + values.others.map { ($0.0, Optional($0.1)) })
    }

    /// Reads, changes and writes the store, holding `defaults.lock` throughout so that a
    /// change made by another process of this home (a second window, a command) in between
    /// is neither lost nor overwritten.
    @discardableResult
    public func update(_ change: (inout Values) -> Void) throws -> Values {
        try file.withLock {
            var values = load().values
            change(&values)
            try save(values)
            return values
        }
    }
}
