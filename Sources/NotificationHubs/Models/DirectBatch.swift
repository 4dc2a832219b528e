/// A direct batch send's body (wire spec §6.3): `multipart/mixed` with a part named
/// `notification` (the payload) and a part named `devices` (a JSON array of handles, at
/// most 1,000). Written by `HubClient` and read by the hub: one format, both ways.
public struct DirectBatch: Sendable, Hashable {
    public var payload: String
    public var devices: [String]

    /// The most handles one batch may name, as on the service.
    public static let maximumDevices = 1000

    public init(payload: String, devices: [String]) {
        self.payload = payload
        self.devices = devices
    }

    /// The body and its `Content-Type`, as .NET writes them (CRLF lines, quoted boundary).
    public func multipart(boundary: String = "nh-batch-multipart-boundary") -> (contentType: String, body: String) {
        var body = "--\(boundary)\r\n"
        body += "Content-Type: application/json\r\nContent-Disposition: inline; name=notification\r\n\r\n"
        body += payload + "\r\n--\(boundary)\r\n"
        body += "Content-Type: application/json\r\nContent-Disposition: inline; name=devices\r\n\r\n"
        body += JSONValue.array(devices.map(JSONValue.string)).text + "\r\n--\(boundary)--\r\n"
        return ("multipart/mixed; boundary=\"\(boundary)\"", body)
    }

    /// Reads a batch: the boundary from `contentType` (quoted or not, spaces around `=`
    /// as JS writes it), parts separated by CRLF or LF lines, the devices part a JSON array of
    /// strings (single quotes, as the service's examples write them, are read too).
    public init(parsing body: [UInt8], contentType: String) throws(DirectBatchError) {
        guard let boundary = Self.boundary(in: contentType) else {
            throw DirectBatchError("the Content-Type must be multipart/mixed with a boundary")
        }
        var payload: String?
        var devices: [String]?
        for part in try Self.parts(of: body, boundary: Array(("--" + boundary).utf8)) {
            let (headers, content) = try Self.split(part)
            guard let disposition = headers["content-disposition"] else {
                throw DirectBatchError("a part has no Content-Disposition")
            }
            let name = Self.parameter("name", in: disposition)?.lowercased()
            guard let text = String(validating: content, as: UTF8.self) else {
                throw DirectBatchError("the \(name ?? "unnamed") part is not UTF-8 text")
            }
            switch name {
            case "notification":
                guard payload == nil else { throw DirectBatchError("there are two notification parts") }
                payload = text
            case "devices":
                guard devices == nil else { throw DirectBatchError("there are two devices parts") }
                devices = try Self.handles(text)
            default:
                throw DirectBatchError(
                    "a part is named \(name.map { "'\($0.prefix(40))'" } ?? "nothing"), not notification or devices")
            }
        }
        guard let payload else { throw DirectBatchError("the notification part is missing") }
        guard let devices, !devices.isEmpty else { throw DirectBatchError("the devices part is missing or empty") }
        self.payload = payload
        self.devices = devices
    }

    static func boundary(in contentType: String) -> String? {
        let pieces = contentType.split(separator: ";", omittingEmptySubsequences: false)
        guard let kind = pieces.first, kind.trimmingCharactersInWhitespace().lowercased() == "multipart/mixed" else {
            return nil
        }
        guard let value = parameter("boundary", in: contentType), (1...70).contains(value.utf8.count),
            value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F })
        else { return nil }
        return value
    }

    /// A `name=value` parameter of a header, the value unquoted.
    static func parameter(_ name: String, in header: String) -> String? {
        for piece in header.split(separator: ";").dropFirst() {
            guard let equals = piece.firstIndex(of: "=") else { continue }
            guard piece[..<equals].trimmingCharactersInWhitespace().lowercased() == name else { continue }
            var value = piece[piece.index(after: equals)...].trimmingCharactersInWhitespace()
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            return value
        }
        return nil
    }

    /// The parts between delimiter lines, without the line break before each delimiter.
    static func parts(of body: [UInt8], boundary: [UInt8]) throws(DirectBatchError) -> [ArraySlice<UInt8>] {
        var starts: [(start: Int, end: Int, closing: Bool)] = []
        var i = 0
        // A delimiter counts at the start of the body or of a line.
        while i + boundary.count <= body.count {
            if i == 0 || body[i - 1] == 0x0A, body[i..<(i + boundary.count)].elementsEqual(boundary) {
                let after = i + boundary.count
                let closing = after + 1 < body.count && body[after] == 0x2D && body[after + 1] == 0x2D
                starts.append((i, after, closing))
                if closing { break }
                // Two parts take three delimiters, the last closing: a third part is refused
                // before the rest of the body is looked at.
                guard starts.count < 3 else { throw DirectBatchError("the body has more than two parts") }
                i = after
            } else {
                i += 1
            }
        }
        guard starts.count >= 2, starts.last!.closing else {
            throw DirectBatchError("the body is not multipart: its boundary lines are missing or it is not closed")
        }
        var parts: [ArraySlice<UInt8>] = []
        for k in 0..<(starts.count - 1) {
            var start = starts[k].end
            // The rest of the delimiter line (transport padding), then its line break.
            while start < body.count, body[start] != 0x0A { start += 1 }
            start += 1
            var end = starts[k + 1].start
            if end > start, body[end - 1] == 0x0A { end -= 1 }
            if end > start, body[end - 1] == 0x0D { end -= 1 }
            parts.append(start <= end ? body[start..<end] : [])
        }
        return parts
    }

    /// A part's headers (lower-cased names) and its content after the blank line.
    static func split(_ part: ArraySlice<UInt8>) throws(DirectBatchError) -> ([String: String], ArraySlice<UInt8>) {
        var headers: [String: String] = [:]
        var i = part.startIndex
        while i < part.endIndex {
            var end = i
            while end < part.endIndex, part[end] != 0x0A { end += 1 }
            var line = part[i..<end]
            if line.last == 0x0D { line = line.dropLast() }
            i = min(end + 1, part.endIndex)
            if line.isEmpty { return (headers, part[i...]) }
            guard headers.count < 16, line.count <= 1024, let text = String(validating: line, as: UTF8.self),
                let colon = text.firstIndex(of: ":")
            else { throw DirectBatchError("a part's headers are not Name: value lines") }
            headers[text[..<colon].trimmingCharactersInWhitespace().lowercased()] =
                text[text.index(after: colon)...].trimmingCharactersInWhitespace()
        }
        throw DirectBatchError("a part has no blank line between its headers and its content")
    }

    static func handles(_ text: String) throws(DirectBatchError) -> [String] {
        var value = try? JSONValue(parsing: text)
        if value == nil, !text.contains("\"") {
            value = try? JSONValue(parsing: text.replacingOccurrences(of: "'", with: "\""))
        }
        guard let items = value?.arrayValue else { throw DirectBatchError("the devices part is not a JSON array of handles") }
        guard items.count <= maximumDevices else {
            throw DirectBatchError("the batch names \(items.count) devices; at most \(maximumDevices) may be sent to at once")
        }
        var handles: [String] = []
        for item in items {
            guard let handle = item.stringValue, !handle.isEmpty else {
                throw DirectBatchError("every device must be a handle, a non-empty string")
            }
            handles.append(handle)
        }
        return handles
    }
}

/// Why a direct batch body could not be read.
public struct DirectBatchError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
