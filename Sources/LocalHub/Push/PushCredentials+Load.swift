import Crypto
import Foundation
import LocalHubSupport
import NotificationHubs

extension PushCredentials {
    static let appleProduction = "https://api.push.apple.com"
    static let appleDevelopment = "https://api.sandbox.push.apple.com"
    static let googleFCM = "https://fcm.googleapis.com"

    static func loadAPNs(_ value: JSONValue, at path: String, _ folder: URL, _ file: String) throws(PushCredentialsError)
        -> APNs
    {
        var fields = Fields(value, at: path, file: file)
        try fields.only(["keyFile", "keyId", "teamId", "topic", "endpoint", "caFile"])
        let key = try secret(fields.required("keyFile"), at: path, folder, file)
        let token: APNsProviderToken
        do {
            token = try APNsProviderToken(
                key: String(decoding: key, as: UTF8.self), keyId: fields.required("keyId"), teamId: fields.required("teamId"))
        } catch let error as PushCredentialsError {
            throw error
        } catch {
            throw PushCredentialsError(file, "\(path): \(error)")
        }
        let topic = try fields.required("topic")
        guard !topic.isEmpty, topic.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw PushCredentialsError(file, "\(path).topic must be the app's bundle id (printable, no spaces)")
        }
        let endpoint: String
        switch try fields.required("endpoint") {
        case "production": endpoint = appleProduction
        case "sandbox": endpoint = appleDevelopment
        case let url:
            // The service's own form ends in /3/device, which requests add themselves.
            let given = try httpsURL(url, at: "\(path).endpoint", file)
            endpoint = given.hasSuffix("/3/device") ? String(given.dropLast("/3/device".count)) : given
        }
        let ca = try caFile(&fields, at: path, folder, file)
        return APNs(token: token, topic: topic, endpoint: endpoint, caFile: ca)
    }

    static func loadFCM(_ value: JSONValue, at path: String, _ folder: URL, _ file: String) throws(PushCredentialsError)
        -> FCMv1
    {
        var fields = Fields(value, at: path, file: file)
        try fields.only(["serviceAccountFile", "endpoint", "caFile"])
        let accountPath = try fields.required("serviceAccountFile")
        let bytes = try secret(accountPath, at: path, folder, file)
        guard let account = try? JSONValue(parsing: bytes) else {
            throw PushCredentialsError(file, "\(path).serviceAccountFile is not JSON (Google's service account key file)")
        }
        func member(_ name: String) throws(PushCredentialsError) -> String {
            guard let text = account[name]?.stringValue, !text.isEmpty else {
                throw PushCredentialsError(file, "\(path).serviceAccountFile has no \"\(name)\" (is it a service account key?)")
            }
            return text
        }
        guard try member("type") == "service_account" else {
            throw PushCredentialsError(file, "\(path).serviceAccountFile is not of type service_account")
        }
        let key = try member("private_key")
        guard key.contains("-----BEGIN PRIVATE KEY-----") else {
            throw PushCredentialsError(file, "\(path).serviceAccountFile's private_key is not a PEM private key")
        }
        var endpoint = googleFCM
        if let given = try fields.optional("endpoint") { endpoint = try httpsURL(given, at: "\(path).endpoint", file) }
        let ca = try caFile(&fields, at: path, folder, file)
        return FCMv1(
            projectId: try member("project_id"), clientEmail: try member("client_email"), privateKeyPEM: key,
            tokenURI: try httpsURL(try member("token_uri"), at: "\(path).serviceAccountFile token_uri", file),
            endpoint: endpoint, caFile: ca)
    }

    static func loadWebPush(_ value: JSONValue, at path: String, _ folder: URL, _ file: String) throws(PushCredentialsError)
        -> WebPush
    {
        var fields = Fields(value, at: path, file: file)
        try fields.only(["vapidKeyFile", "subject", "caFile", "allowPrivateEndpoints"])
        let bytes = try secret(fields.required("vapidKeyFile"), at: path, folder, file)
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: String(decoding: bytes, as: UTF8.self)) else {
            throw PushCredentialsError(file, "\(path).vapidKeyFile is not a P-256 private key in PEM")
        }
        let subject = try fields.required("subject")
        guard subject.hasPrefix("mailto:") || subject.hasPrefix("https://"), subject.utf8.count > 8,
            subject.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw PushCredentialsError(file, "\(path).subject must be a mailto: or https: URL (RFC 8292)")
        }
        let ca = try caFile(&fields, at: path, folder, file)
        let allowPrivate = try fields.flag("allowPrivateEndpoints")
        return WebPush(vapidKey: key, subject: subject, caFile: ca, allowPrivateEndpoints: allowPrivate)
    }

    /// A key file, named relative to the configuration's folder.
    private static func secret(_ name: String, at path: String, _ folder: URL, _ file: String) throws(PushCredentialsError)
        -> [UInt8]
    {
        do {
            return try SecretFile.read(resolve(name, folder))
        } catch {
            throw PushCredentialsError(file, "\(path): \(error)")
        }
    }

    private static func caFile(_ fields: inout Fields, at path: String, _ folder: URL, _ file: String)
        throws(PushCredentialsError) -> String?
    {
        guard let name = try fields.optional("caFile") else { return nil }
        return try existing(name, at: "\(path).caFile", folder, file)
    }

    private static func existing(_ name: String, at path: String, _ folder: URL, _ file: String) throws(PushCredentialsError)
        -> String
    {
        let resolved = resolve(name, folder)
        guard FileManager.default.isReadableFile(atPath: resolved) else {
            throw PushCredentialsError(file, "\(path) names \(resolved), which cannot be read")
        }
        return resolved
    }

    private static func resolve(_ name: String, _ folder: URL) -> String {
        name.hasPrefix("/") ? name : folder.appendingPathComponent(name).path
    }

    private static func httpsURL(_ text: String, at path: String, _ file: String) throws(PushCredentialsError) -> String {
        guard let url = URL(string: text), url.scheme == "https", let host = url.host, !host.isEmpty, url.query == nil else {
            throw PushCredentialsError(file, "\(path) must be an https URL (not \"\(text.prefix(80))\")")
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }
}

/// The members of one object of the configuration, each taken once; `only` refuses the
/// unknown ones first.
struct Fields {
    private var members: [(String, JSONValue)]
    private let path: String
    private let file: String

    init(_ value: JSONValue, at path: String, file: String) {
        members = value.objectMembers ?? []
        self.path = path
        self.file = file
    }

    private mutating func take(_ name: String) -> JSONValue? {
        guard let index = members.firstIndex(where: { $0.0 == name }) else { return nil }
        return members.remove(at: index).1
    }

    private func at(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    mutating func object(_ name: String) throws(PushCredentialsError) -> [(String, JSONValue)]? {
        guard let value = take(name), !value.isNull else { return nil }
        guard let members = value.objectMembers else { throw PushCredentialsError(file, "\(at(name)) must be an object") }
        return members
    }

    mutating func optional(_ name: String) throws(PushCredentialsError) -> String? {
        guard let value = take(name), !value.isNull else { return nil }
        guard let text = value.stringValue else { throw PushCredentialsError(file, "\(at(name)) must be a string") }
        return text
    }

    mutating func flag(_ name: String) throws(PushCredentialsError) -> Bool {
        guard let value = take(name), !value.isNull else { return false }
        guard case .bool(let flag) = value else { throw PushCredentialsError(file, "\(at(name)) must be true or false") }
        return flag
    }

    mutating func required(_ name: String) throws(PushCredentialsError) -> String {
        guard let text = try optional(name) else { throw PushCredentialsError(file, "\(at(name)) is missing") }
        return text
    }

    /// Refuses a member not in `names`, before any is read.
    func only(_ names: Set<String>) throws(PushCredentialsError) {
        guard let unknown = members.first(where: { !names.contains($0.0) })?.0 else { return }
        throw PushCredentialsError(file, "has an unknown field \(at(unknown).prefix(120)) (a misspelling?)")
    }
}

/// Why the providers file was refused: the file, and what in it.
public struct PushCredentialsError: Error, CustomStringConvertible, Sendable {
    public let description: String

    /// Control characters (from a hostile or broken file's names and values) are shown as `?`.
    init(_ file: String, _ problem: String) {
        let text = file.isEmpty ? problem : "\(file) \(problem)"
        description = String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? "?" : $0 }))
    }
}
