import Foundation
import HTTPTypes
import Hummingbird
import NotificationHubs

/// A request as the hub reads it: path segments and query keys compared ignoring case,
/// trailing slashes ignored, header names in any case.
struct HubRequest {
    let request: Request
    /// Path segments, percent-decoded, empty ones dropped.
    let segments: [String]
    /// Lower-cased segments, for matching routes; worked out when asked for.
    var lowered: [String] { segments.map { $0.lowercased() } }
    /// The raw path, as signed by clients.
    let rawPath: String
    /// Query parameters with lower-cased names; a bare flag (`&test`) has an empty value.
    /// Worked out when asked for: most requests never read their query here.
    var query: [String: String] {
        var query: [String: String] = [:]
        for (name, value) in Self.queryPairs(request.uri.query) { query[name] = value }
        return query
    }
    let trackingId: String
    /// Who it comes from (`RequestClient`).
    let client: RequestClient
    /// What the key that signed it grants, once checked (`Requires`).
    let rights: AccessRights

    /// The request as a route handler sees it, with the tracking id and client the front
    /// settled on.
    init(_ request: Request, _ context: HubRequestContext) {
        self.init(request, trackingId: context.trackingId, client: context.client, rights: context.rights)
    }

    init(_ request: Request, trackingId: String, client: RequestClient = .unknown, rights: AccessRights = []) {
        self.request = request
        self.client = client
        self.rights = rights
        let path = request.uri.path
        rawPath = path
        segments = path.split(separator: "/", omittingEmptySubsequences: true).map {
            PercentEncoding.decode(String($0)) ?? String($0)
        }
        self.trackingId = trackingId
    }

    /// The query's parameters, names percent-decoded and lower-cased, values decoded (`+` is
    /// a space); a bare flag (`&test`) has an empty value.
    static func queryPairs(_ query: String?) -> [(name: String, value: String)] {
        (query ?? "").split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = (PercentEncoding.decode(String(parts[0])) ?? String(parts[0])).lowercased()
            let raw = parts.count > 1 ? String(parts[1].map { $0 == "+" ? " " : $0 }) : ""
            return (name, PercentEncoding.decode(raw) ?? raw)
        }
    }

    /// One parameter of a query, as `query` would hold it (the last one when repeated);
    /// only a query that mentions it is parsed.
    static func queryValue(_ query: String?, named name: String) -> String? {
        guard let query, query.utf8.contains(UInt8(ascii: "%")) || containsIgnoringASCIICase(query, name) else { return nil }
        return queryPairs(query).last { $0.name == name }?.value
    }

    /// Whether `text` holds `needle` (lower-case ASCII), letters compared ignoring case: bytes,
    /// without Foundation's string search.
    static func containsIgnoringASCIICase(_ text: String, _ needle: String) -> Bool {
        let haystack = Array(text.utf8)
        let wanted = Array(needle.utf8)
        guard !wanted.isEmpty, haystack.count >= wanted.count else { return wanted.isEmpty }
        func lower(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte | 0x20 : byte }
        for start in 0...(haystack.count - wanted.count)
        where (0..<wanted.count).allSatisfy({ lower(haystack[start + $0]) == wanted[$0] }) {
            return true
        }
        return false
    }

    /// A client's `TrackingId` when it is one the hub may echo (into headers and XML):
    /// 1 to 128 letters, digits and `- _ . :`. Anything else gets a new id.
    static func acceptedTrackingId(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.count <= 128,
            text.utf8.allSatisfy({ PercentEncoding.isUnreserved($0) || $0 == UInt8(ascii: ":") })
        else { return nil }
        return text
    }

    static let trackingIdField = HTTPField.Name("TrackingId")!

    /// A new random id in the UUID shape (version 4): 122 bits from the system's generator,
    /// so no id tells anything of another or of how many requests came between; written into
    /// a 36-byte string without interpolation.
    static func newTrackingId() -> String {
        var random = SystemRandomNumberGenerator()
        let a: UInt64 = random.next()
        let b: UInt64 = random.next()
        return String(unsafeUninitializedCapacity: 36) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var at = 0
            func put(_ value: UInt64, _ count: Int) {
                for shift in stride(from: (count - 1) * 4, through: 0, by: -4) {
                    buffer[at] = digits.utf8Start[Int((value >> UInt64(shift)) & 0xf)]
                    at += 1
                }
            }
            func dash() {
                buffer[at] = UInt8(ascii: "-")
                at += 1
            }
            put(a >> 32, 8)
            dash()
            put((a >> 16) & 0xffff, 4)
            dash()
            put(0x4000 | (a & 0xfff), 4)
            dash()
            put(0x8000 | ((b >> 48) & 0x3fff), 4)
            dash()
            put(b & 0xffff_ffff_ffff, 12)
            return at
        }
    }

    var method: HTTPRequest.Method { request.method }

    func header(_ name: String) -> String? {
        guard let field = HTTPField.Name(name) else { return nil }
        return request.headers[field]
    }

    func header(_ field: HTTPField.Name) -> String? { request.headers[field] }

    static let hostField = HTTPField.Name("Host")!

    /// The host the client addressed (for token audiences and `Location`), port included.
    var authority: String { request.head.authority ?? header(Self.hostField) ?? "localhost" }

    /// A byte of a host name, an IPv4 or bracketed IPv6 address, and a port.
    static func isAuthorityByte(_ byte: UInt8) -> Bool {
        PercentEncoding.isUnreserved(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "[")
            || byte == UInt8(ascii: "]")
    }

    /// A query flag such as `test` or `direct`: present bare or with any value but `false`.
    func flag(_ name: String) -> Bool {
        guard let value = query[name] else { return false }
        return value.lowercased() != "false"
    }

    var apiVersion: String? { Self.queryValue(request.uri.query, named: "api-version") }

    var contentType: String? { header("Content-Type")?.lowercased() }
}
