import Crypto

/// A browser's Web Push subscription as a hub keeps it (`PushSubscription.toJSON()`): its
/// endpoint, read by `PushEndpoint`'s strict rules, its `p256dh` key (base64url of an
/// uncompressed P-256 point, 65 bytes) and its `auth` secret (base64url, 16 bytes). Checked
/// when an installation or a direct send names it, so that nothing unusable is stored.
public enum WebPushSubscription {
    /// Refuses a subscription that cannot be sent to, naming the part at fault.
    public static func check(endpoint: String, p256dh: String, auth: String) throws(InstallationError) {
        do {
            _ = try PushEndpoint(endpoint)
        } catch {
            throw InstallationError("the pushChannel endpoint \(error)")
        }
        guard publicKey(p256dh) != nil else {
            throw InstallationError(
                "the pushChannel p256dh is not a P-256 public key (base64url of the 65-byte uncompressed point)")
        }
        guard authSecret(auth) != nil else {
            throw InstallationError("the pushChannel auth is not a 16-byte secret in base64url")
        }
    }

    /// The subscription's key as a point on P-256 (its 65 bytes), or nil.
    public static func publicKey(_ p256dh: String) -> [UInt8]? {
        guard p256dh.utf8.count <= 100, let bytes = decode(p256dh), bytes.count == 65, bytes.first == 0x04,
            (try? P256.KeyAgreement.PublicKey(x963Representation: bytes)) != nil
        else { return nil }
        return bytes
    }

    /// The subscription's 16-byte auth secret, or nil.
    public static func authSecret(_ auth: String) -> [UInt8]? {
        guard auth.utf8.count <= 32, let bytes = decode(auth), bytes.count == 16 else { return nil }
        return bytes
    }

    /// Base64url, with the padding some senders keep tolerated.
    private static func decode(_ text: String) -> [UInt8]? {
        var text = Substring(text)
        for _ in 0..<2 where text.hasSuffix("=") { text.removeLast() }
        return Base64URL.decode(String(text))
    }
}

/// A Web Push endpoint read strictly: `https`, a host (a DNS name, an IPv4 address in any
/// of the spellings `inet_aton` takes, or a bracketed IPv6 address), a port from 1 to
/// 65535 (443 when absent), and a path of printable ASCII; no user information, no
/// fragment, at most `maximumLength` bytes. The host is kept in one canonical spelling, so
/// that the address a request goes to is decided once, from this value, and never by
/// another parser reading the text again.
public struct PushEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The longest endpoint accepted.
    public static let maximumLength = 2048

    /// The host as written in a URL.
    public enum Host: Sendable, Hashable {
        /// A DNS name, lower-cased.
        case name(String)
        /// An IPv4 address, four bytes.
        case ipv4([UInt8])
        /// An IPv6 address, sixteen bytes.
        case ipv6([UInt8])
    }

    public let host: Host
    public let port: Int
    /// The path and query, starting with `/` (just `/` when the endpoint had none).
    public let path: String

    /// Why an endpoint was refused, as the end of a sentence about it.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    public init(_ text: String) throws(Refusal) {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maximumLength else {
            throw Refusal("is \(bytes.count) bytes long; at most \(Self.maximumLength) are allowed")
        }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw Refusal("must be printable ASCII without spaces")
        }
        let scheme = Array("https://".utf8)
        guard bytes.count >= scheme.count, zip(bytes, scheme).allSatisfy({ Self.lower($0) == $1 }) else {
            throw Refusal("must be an https:// URL")
        }
        let rest = bytes[scheme.count...]
        guard !rest.contains(UInt8(ascii: "#")), !rest.contains(UInt8(ascii: "\\")) else {
            throw Refusal("must not hold '#' or '\\'")
        }
        let authorityEnd = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        let authority = rest[rest.startIndex..<authorityEnd]
        guard !authority.contains(UInt8(ascii: "@")) else { throw Refusal("must not hold user information") }
        let hostPart: ArraySlice<UInt8>
        let portPart: ArraySlice<UInt8>?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else {
                throw Refusal("has an IPv6 address without its ']'")
            }
            hostPart = authority[authority.startIndex...close]
            let after = authority[(close + 1)...]
            if after.isEmpty {
                portPart = nil
            } else {
                guard after.first == UInt8(ascii: ":") else { throw Refusal("has text after its IPv6 address") }
                portPart = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
            hostPart = authority[authority.startIndex..<colon]
            portPart = authority[(colon + 1)...]
        } else {
            hostPart = authority
            portPart = nil
        }
        host = try Self.host(hostPart)
        if let portPart {
            guard (1...5).contains(portPart.count), portPart.allSatisfy({ (0x30...0x39).contains($0) }),
                let value = Int(String(decoding: portPart, as: UTF8.self)), (1...65535).contains(value)
            else { throw Refusal("has a port that is not a number from 1 to 65535") }
            port = value
        } else {
            port = 443
        }
        let tail = rest[authorityEnd...]
        path =
            tail.first == UInt8(ascii: "?")
            ? "/" + String(decoding: tail, as: UTF8.self) : tail.isEmpty ? "/" : String(decoding: tail, as: UTF8.self)
    }

    /// The host as a URL writes it: a name, dotted IPv4, or bracketed IPv6.
    public var hostText: String {
        switch host {
        case .name(let name): return name
        case .ipv4(let bytes): return bytes.map(String.init).joined(separator: ".")
        case .ipv6(let bytes): return "[\(Self.ipv6Text(bytes))]"
        }
    }

    /// The origin (RFC 6454): `https://host`, with the port when it is not 443.
    public var origin: String { port == 443 ? "https://\(hostText)" : "https://\(hostText):\(port)" }

    /// The endpoint as requests are made to it, in canonical spelling.
    public var url: String { origin + path }

    public var description: String { url }

    // MARK: - Host

    private static func host(_ raw: ArraySlice<UInt8>) throws(Refusal) -> Host {
        guard !raw.isEmpty else { throw Refusal("has no host") }
        guard let decoded = percentDecoded(raw) else { throw Refusal("has a host with a broken %-escape") }
        if decoded.first == UInt8(ascii: "[") {
            let inner = decoded.dropFirst().dropLast()
            guard decoded.last == UInt8(ascii: "]"), let address = parseIPv6(inner) else {
                throw Refusal("has a bracketed host that is not an IPv6 address")
            }
            return .ipv6(address)
        }
        guard decoded.count <= 253,
            decoded.allSatisfy({ isNameByte($0) })
        else { throw Refusal("has a host that is not a DNS name or an IP address") }
        if let address = parseIPv4(decoded) { return .ipv4(address) }
        let name = String(decoding: decoded.map(lower), as: UTF8.self)
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        // One trailing dot (the root) is allowed; no other empty label.
        let named = labels.last == "" ? labels.dropLast() : labels[...]
        guard !named.isEmpty, named.allSatisfy({ (1...63).contains($0.utf8.count) }) else {
            throw Refusal("has a host that is not a DNS name or an IP address")
        }
        return .name(name)
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
    }

    static func lower(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte + 0x20 : byte }

    private static func percentDecoded(_ raw: ArraySlice<UInt8>) -> [UInt8]? {
        var result: [UInt8] = []
        var i = raw.startIndex
        while i < raw.endIndex {
            if raw[i] == UInt8(ascii: "%") {
                guard i + 2 < raw.endIndex, let high = hexValue(raw[i + 1]), let low = hexValue(raw[i + 2]) else {
                    return nil
                }
                result.append(high << 4 | low)
                i += 3
            } else {
                result.append(raw[i])
                i += 1
            }
        }
        return result
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }

    /// IPv4 in every spelling `inet_aton` reads (and so every resolver): one to four parts,
    /// each decimal, octal (leading `0`) or hexadecimal (`0x`), the last filling the bytes
    /// left (`127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`, `0`). Nil for anything else.
    public static func parseIPv4(_ text: [UInt8]) -> [UInt8]? {
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var values: [UInt64] = []
        for part in parts {
            guard !part.isEmpty else { return nil }
            var digits = part[...]
            var radix: UInt64 = 10
            if digits.count > 1, digits.first == UInt8(ascii: "0") {
                digits = digits.dropFirst()
                radix = 8
                if let x = digits.first, x == UInt8(ascii: "x") || x == UInt8(ascii: "X") {
                    digits = digits.dropFirst()
                    radix = 16
                }
            }
            var value: UInt64 = 0
            for byte in digits {
                guard let digit = hexValue(byte).map(UInt64.init), digit < radix else { return nil }
                value = value * radix + digit
                guard value <= 0xFFFF_FFFF else { return nil }
            }
            values.append(value)
        }
        // Every part but the last is one byte; the last fills what is left.
        for value in values.dropLast() where value > 0xFF { return nil }
        let lastBytes = 4 - (values.count - 1)
        guard values[values.count - 1] < (UInt64(1) << (8 * UInt64(lastBytes))) else { return nil }
        var address = values.dropLast().map { UInt8($0) }
        let last = values[values.count - 1]
        for shift in stride(from: 8 * (lastBytes - 1), through: 0, by: -8) {
            address.append(UInt8(truncatingIfNeeded: last >> UInt64(shift)))
        }
        return address
    }

    /// An IPv6 address as RFC 4291 §2.2 writes it: eight groups of up to four hex digits,
    /// one `::`, an IPv4 tail in dotted decimal. Nil for anything else (zones included).
    public static func parseIPv6(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard !text.isEmpty, text.count <= 45 else { return nil }
        var text = Array(text)
        var tail: [UInt8] = []
        // An IPv4 tail: strictly four decimal parts.
        if let lastColon = text.lastIndex(of: UInt8(ascii: ":")), text[(lastColon + 1)...].contains(UInt8(ascii: ".")) {
            let v4 = text[(lastColon + 1)...].split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            guard v4.count == 4 else { return nil }
            for part in v4 {
                guard (1...3).contains(part.count), part.allSatisfy({ (0x30...0x39).contains($0) }),
                    let value = Int(String(decoding: part, as: UTF8.self)), value <= 255,
                    part.count == 1 || part.first != UInt8(ascii: "0")
                else { return nil }
                tail.append(UInt8(value))
            }
            text = Array(text[...lastColon])
            // "::1.2.3.4" leaves "::", "a::1.2.3.4" leaves "a::", "a:b:…:1.2.3.4" leaves "…:".
            if text.count >= 2, text.suffix(2) == [UInt8(ascii: ":"), UInt8(ascii: ":")] {
                // stays: the double colon itself
            } else {
                text.removeLast()
            }
        }
        let halves = split(text, on: [UInt8(ascii: ":"), UInt8(ascii: ":")])
        guard halves.count <= 2 else { return nil }
        func groups(_ part: [UInt8]) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            for group in part.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false) {
                guard (1...4).contains(group.count) else { return nil }
                var value: UInt16 = 0
                for byte in group {
                    guard let digit = hexValue(byte) else { return nil }
                    value = value << 4 | UInt16(digit)
                }
                result.append(value)
            }
            return result
        }
        let groupsInTail = tail.isEmpty ? 0 : 2
        var all: [UInt16]
        if halves.count == 2 {
            guard let head = groups(halves[0]), let rest = groups(halves[1]) else { return nil }
            let missing = 8 - groupsInTail - head.count - rest.count
            guard missing >= 1 else { return nil }
            all = head + Array(repeating: 0, count: missing) + rest
        } else {
            guard let only = groups(halves[0]), only.count + groupsInTail == 8 else { return nil }
            all = only
        }
        var bytes = all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        bytes += tail
        return bytes.count == 16 ? bytes : nil
    }

    private static func split(_ text: [UInt8], on separator: [UInt8]) -> [[UInt8]] {
        var parts: [[UInt8]] = []
        var current: [UInt8] = []
        var i = 0
        while i < text.count {
            if i + 1 < text.count, text[i] == separator[0], text[i + 1] == separator[1] {
                parts.append(current)
                current = []
                i += 2
            } else {
                current.append(text[i])
                i += 1
            }
        }
        parts.append(current)
        return parts
    }

    /// RFC 5952's text of an IPv6 address: lower-case hex, no leading zeros, the longest run
    /// of two or more zero groups as `::`.
    public static func ipv6Text(_ bytes: [UInt8]) -> String {
        let groups = stride(from: 0, to: 16, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
        var best = (start: -1, length: 0)
        var run = (start: -1, length: 0)
        for (i, group) in groups.enumerated() {
            if group == 0 {
                run = run.start < 0 ? (i, 1) : (run.start, run.length + 1)
                if run.length > best.length { best = run }
            } else {
                run = (-1, 0)
            }
        }
        func hex(_ range: ArraySlice<UInt16>) -> String { range.map { String($0, radix: 16) }.joined(separator: ":") }
        guard best.length >= 2 else { return hex(groups[...]) }
        return hex(groups[..<best.start]) + "::" + hex(groups[(best.start + best.length)...])
    }
}
