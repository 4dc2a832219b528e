import Crypto
import Foundation

/// Who this terminal is to the hub: a stable installation id (made once) and its push
/// channel, a 64-hex device token for the sandbox push service, stable per installation.
public struct DeviceIdentity: Sendable, Hashable {
    public let installationId: String
    /// Upper-case hex, as the tutorial formats APNs tokens (`%02X`).
    public let deviceToken: String

    public init(installationId: String, deviceToken: String) {
        self.installationId = installationId
        self.deviceToken = deviceToken
    }

    /// The identity kept in the user defaults, made and saved on first use.
    public static func load(from store: DefaultsStore) throws -> DeviceIdentity {
        let values = store.load().values
        if let id = values.installationId, let token = values.deviceToken, !id.isEmpty, token.count == 64 {
            return DeviceIdentity(installationId: id, deviceToken: token)
        }
        let id = values.installationId.flatMap { $0.isEmpty ? nil : $0 } ?? UUID().uuidString.lowercased()
        let identity = DeviceIdentity(installationId: id, deviceToken: token(for: id))
        try store.update {
            $0.installationId = identity.installationId
            $0.deviceToken = identity.deviceToken
        }
        return identity
    }

    /// The device token of an installation: SHA-256 of its id, 32 bytes as 64 hex digits.
    public static func token(for installationId: String) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var hex: [UInt8] = []
        for byte in SHA256.hash(data: Array(installationId.utf8)) {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}
