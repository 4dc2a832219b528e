/// A push platform of an installation (wire spec §4.3), read case-insensitively.
public enum Platform: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case apns
    case wns
    case mpns
    case gcm
    case fcmV1
    case adm
    case baidu
    case browser
    case xiaomi

    /// Reads a platform value in any case (`APNS`, `fcmv1`, `FCMV1`…).
    public init?(wireValue: String) {
        let lower = wireValue.lowercased()
        guard let match = Platform.allCases.first(where: { $0.rawValue.lowercased() == lower }) else { return nil }
        self = match
    }

    /// Whether template bodies of this platform are JSON (XML for wns and mpns).
    public var usesJSONTemplates: Bool {
        self != .wns && self != .mpns
    }

    /// The `ServiceBusNotification-Format` of native sends to this platform.
    public var nativeFormat: NotificationFormat {
        switch self {
        case .apns: return .apple
        case .wns: return .windows
        case .mpns: return .windowsPhone
        case .gcm: return .gcm
        case .fcmV1: return .fcmV1
        case .adm: return .adm
        case .baidu: return .baidu
        case .browser: return .browser
        case .xiaomi: return .xiaomi
        }
    }

    public var description: String { rawValue }
}

/// `ServiceBusNotification-Format` values, read case-insensitively.
public enum NotificationFormat: String, Sendable, Hashable, CaseIterable {
    case template
    case apple
    case gcm
    case fcmV1 = "fcmv1"
    case windows
    case windowsPhone = "windowsphone"
    case adm
    case baidu
    case browser
    case xiaomi
    case nokiaX = "nokiax"

    public init?(wireValue: String) {
        let lower = wireValue.trimmingCharactersInSpaces().lowercased()
        guard let match = NotificationFormat.allCases.first(where: { $0.rawValue == lower }) else { return nil }
        self = match
    }

    /// The platform a native send of this format reaches; `nil` for templates.
    public var platform: Platform? {
        switch self {
        case .template, .nokiaX: return nil
        case .apple: return .apns
        case .gcm: return .gcm
        case .fcmV1: return .fcmV1
        case .windows: return .wns
        case .windowsPhone: return .mpns
        case .adm: return .adm
        case .baidu: return .baidu
        case .browser: return .browser
        case .xiaomi: return .xiaomi
        }
    }
}

extension String {
    func trimmingCharactersInSpaces() -> String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return String(s)
    }
}
