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
/// `BreakingNewsCategories`, the arrival alerts, the days read messages are kept. Keys it does
/// not know are kept. Writes are atomic; a corrupt file is moved aside, never overwritten.
/// Who this terminal is lives apart, in `InstallationStore`, so that a corrupt preferences file
/// never costs it; earlier versions kept it here, and the fields that held it are read once to
/// move it (`DeviceIdentity.load`).
///
/// Every save also writes a copy, `defaults.backup.json` beside it (and a read writes it when
/// it is missing or differs, for a home of an earlier version or a file edited by hand): a
/// corrupt file is set aside and every value restored from the copy, by whichever process
/// reads it first — a window, a command. Without a usable copy the selection comes back from
/// the last registration (`fallback`), and the warning says what that loses. What the restore
/// said is kept in `defaults.restored.txt`, so that every window open at the time shows it,
/// whoever noticed.
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
    private let copy: KeptJSONObject
    private let fallback: @Sendable () -> Fallback

    /// What a corrupt file without a usable copy is recovered from, as `installation.json`
    /// holds it: the categories last registered (names of the catalog) and who this terminal is.
    public struct Fallback: Sendable {
        public var categories: [String]
        public var installationId: String?

        public init(categories: [String] = [], installationId: String? = nil) {
            self.categories = categories
            self.installationId = installationId
        }
    }

    public init(url: URL, fallback: @escaping @Sendable () -> Fallback = { Fallback() }) {
        self.url = url
        self.file = KeptJSONObject(url: url, consequence: Self.startsEmpty)
        self.copy = KeptJSONObject(url: Self.backupURL(of: url), consequence: "it is written again at the next save")
        self.fallback = fallback
    }

    static let startsEmpty = "the selection starts empty"

    /// The copy of `url` every save writes: `defaults.backup.json` beside it.
    public static func backupURL(of url: URL) -> URL {
        url.deletingLastPathComponent().appendingPathComponent("defaults.backup.json")
    }

    public var backupURL: URL { Self.backupURL(of: url) }

    /// What the last restore of a corrupt file said: `defaults.restored.txt` beside it.
    public static func restoreNoteURL(of url: URL) -> URL {
        url.deletingLastPathComponent().appendingPathComponent("defaults.restored.txt")
    }

    public var restoreNoteURL: URL { Self.restoreNoteURL(of: url) }

    /// The warning of the last restore, as every process of the home may read it.
    public var restoreNote: String? {
        guard let data = try? Data(contentsOf: restoreNoteURL), data.count <= 65_536, !data.isEmpty else { return nil }
        return String(decoding: data, as: UTF8.self)
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
    /// `defaults.json.corrupt-<time>`, its values restored (see the type's note), and what
    /// happened reported in `warning`.
    public func load(now: Date = Date()) -> Loaded { load(now: now, locked: false) }

    private func load(now: Date, locked: Bool) -> Loaded {
        if let members = file.peek() {
            keepCopy(of: members, locked: locked)
            return Loaded(values: Self.values(from: members))
        }
        // Missing or corrupt: read again holding the lock, so that a file another process is
        // setting aside and restoring is read restored, never as missing in between. (A home
        // without a lock file has never been written: nothing to wait for.)
        if !locked, file.exists || FileManager.default.fileExists(atPath: file.lockURL.path),
            let loaded = try? file.withLock({ load(now: now, locked: true) })
        {
            return loaded
        }
        let (members, warning) = file.read(now: now)
        guard let warning, !file.exists else { return Loaded(values: Self.values(from: members), warning: warning) }
        return restore(after: warning)
    }

    /// After the corrupt file was moved aside (`warning`), holding the lock: every value
    /// comes back from the copy; without one, the selection from the last registration.
    private func restore(after warning: String) -> Loaded {
        let last = fallback()
        var values = Values()
        var said = Self.startsEmpty
        if let kept = copy.peek(), !kept.isEmpty, (try? file.write(kept.map { ($0.0, Optional($0.1)) })) != nil {
            values = Self.values(from: kept)
            said = "every value was restored from \(copy.url.lastPathComponent) (\(Self.describe(values)))"
        } else if !last.categories.isEmpty, (try? save(Values(categories: last.categories))) != nil {
            values.categories = last.categories
            said =
                "the selection was restored from the last registration (\(last.categories.joined(separator: ", "))); "
                + "with no copy in \(copy.url.lastPathComponent), the alerts are off and read messages are kept for good"
        }
        var text = warning.replacingOccurrences(of: Self.startsEmpty, with: said)
        if let id = last.installationId { text += "; this terminal is still installation \(id)" }
        // For the windows open now, whichever process noticed.
        try? AtomicFile.write(Data(text.utf8), to: restoreNoteURL, permissions: 0o600)
        return Loaded(values: values, warning: text)
    }

    /// What a restore brought back, for its warning.
    static func describe(_ values: Values) -> String {
        let alerts = [values.arrivalAlerts.bell ? "bell" : nil, values.arrivalAlerts.desktop ? "desktop" : nil]
            .compactMap { $0 }
        var parts = [
            values.categories.isEmpty ? "no categories" : "categories \(values.categories.joined(separator: ", "))",
            "alerts \(alerts.isEmpty ? "off" : alerts.joined(separator: ", "))",
            values.keepReceivedDays.map { "read messages kept \($0) day\($0 == 1 ? "" : "s")" } ?? "read messages kept for good",
        ]
        if !values.others.isEmpty { parts.append("\(values.others.count) other setting\(values.others.count == 1 ? "" : "s")") }
        return parts.joined(separator: "; ")
    }

    /// Writes the copy when it lacks what the file holds (a home of an earlier version, a file
    /// edited by hand), under the lock so that it never goes back over a newer save.
    private func keepCopy(of members: [(String, JSONValue)], locked: Bool) {
        guard copy.peek().map({ JSONValue.object($0) }) != JSONValue.object(members) else { return }
        let write = { [file, copy] in
            guard let now = file.peek(), copy.peek().map({ JSONValue.object($0) }) != JSONValue.object(now) else { return }
            try? copy.write(now.map { ($0.0, Optional($0.1)) })
        }
        if locked { write() } else { _ = try? file.withLock(write) }
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

    /// Writes the store atomically (temporary file, then rename), then its copy.
    public func save(_ values: Values) throws {
        let members: [(String, JSONValue?)] =
            [
                (Self.categoriesKey, .strings(values.categories)),
                (Self.installationIdKey, values.installationId.map(JSONValue.string)),
                (Self.deviceTokenKey, values.deviceToken.map(JSONValue.string)),
                (Self.previousDeviceTokenKey, values.previousDeviceToken.map(JSONValue.string)),
                (Self.registrationKey, values.lastRegistration?.json),
                (Self.arrivalAlertsKey, values.arrivalAlerts.isOff ? nil : values.arrivalAlerts.json),
                (Self.keepReceivedDaysKey, values.keepReceivedDays.map { .number(String($0)) }),
            ] + values.others.map { ($0.0, Optional($0.1)) }
        try file.write(members)
        try? copy.write(members)
    }

    /// Reads, changes and writes the store, holding `defaults.lock` throughout so that a
    /// change made by another process of this home (a second window, a command) in between
    /// is neither lost nor overwritten.
    @discardableResult
    public func update(_ change: (inout Values) -> Void) throws -> Values {
        try file.withLock {
            var values = load(now: Date(), locked: true).values
            change(&values)
            try save(values)
            return values
        }
    }
}
