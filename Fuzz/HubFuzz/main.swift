// libFuzzer entry point for the parsers of the wire library, and for the hub's readers of its
// key file, a backup's info and its stored rows (HubTargets.swift) (`make fuzz`). One binary,
// the target chosen by FUZZ_TARGET. Each target parses what libFuzzer hands it and, when that
// succeeds, checks what a correct parser guarantees: what it writes reads back the same.
// A crash, a failed check (a trap), a hang or a leak is a finding.
import CFuzzer
import Foundation
import NotificationHubs

enum FuzzTarget: String, CaseIterable {
    case tagExpression = "tag-expression"
    case template
    case json
    case xml
    case sas
    case jsonPatch = "json-patch"
    case atom
    case sse
    case installation
    case directBatch = "direct-batch"
    case pushEndpoint = "push-endpoint"
    case scheduleTime = "schedule-time"
    case keysFile = "keys-file"
    case backupInfo = "backup-info"
    case storedRows = "stored-rows"
}

let fuzzTarget: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("FUZZ_TARGET must be one of: \(names)\n".utf8))
        exit(2)
    }
    return target
}()

/// Traps with a message when a property does not hold.
func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("property violated: \(message())") }
}

let verifier = SASVerifier(rules: [
    AuthorizationRule(name: "DefaultListenSharedAccessSignature", primaryKey: "bGlzdGVuLWtleQ==", rights: .listen),
    AuthorizationRule(name: "full", primaryKey: "ZnVsbC1rZXk=", secondaryKey: "c2Vjb25k", rights: .full),
])

let baseInstallation: Installation = {
    var installation = Installation(
        installationId: "fuzz-1", platform: .apns, pushChannel: "AB12", tags: ["World"],
        templates: ["simpleAPNSTemplate": InstallationTemplate(body: #"{"aps":{"alert":"$(messageParam)"}}"#)])
    installation.userId = "user"
    return installation
}()

func fuzzTagExpression(_ text: String) {
    guard let expression = try? TagExpression(parsing: text) else { return }
    let again = try? TagExpression(parsing: expression.description)
    check(again == expression, "tag expression \(expression) does not read back from \(expression.description)")
    let tags = Set(expression.tags.prefix(3))
    check(expression.matches(tags) == again!.matches(tags), "evaluation differs after a round trip")
}

func fuzzTemplate(_ text: String) {
    guard let template = try? Template(body: text) else { return }
    let properties = TemplateProperties(["messageParam": text, "a": "1.5", "b": "\u{0}\"\\", "n": "12"])
    let rendered = template.render(properties)
    check((try? JSONValue(parsing: rendered)) != nil, "a rendering of \(text) is not JSON")
}

func fuzzJSON(_ bytes: [UInt8]) {
    guard let value = try? JSONValue(parsing: bytes) else { return }
    check((try? JSONValue(parsing: value.text)) == value, "compact JSON does not read back")
    check((try? JSONValue(parsing: value.prettyText)) == value, "pretty JSON does not read back")
}

func fuzzXML(_ text: String) {
    guard let root = try? XMLNode(parsing: text) else { return }
    // Text the reader accepted can be written back and read the same.
    let written = "<r a=\"\(XMLNode.escape(root.text))\">\(XMLNode.escape(root.text))</r>"
    let again = try? XMLNode(parsing: written)
    check(again?.text == root.text && again?.attributes["a"] == root.text, "escaped text does not read back")
    _ = ServiceErrorBody(xml: text)
    _ = try? NotificationOutcome(xml: text)
    _ = try? NotificationDetails(xml: text)
    _ = try? Registration.parseFeed(text)
}

func fuzzSAS(_ text: String) {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    _ = try? verifier.verify(header: text, host: "127.0.0.1:47474", path: "/news/installations/x", now: now)
    _ = SASVerifier.normalizedAudience(text)
    if let token = try? SharedAccessToken(parsing: text) {
        check(!token.resource.isEmpty && !token.signature.isEmpty, "a parsed token lacks a field")
    }
    // A token made for any resource verifies for that resource.
    let made = SharedAccessSignature.make(resource: "http://h/" + text, keyName: "full", key: "ZnVsbC1rZXk=", now: now)
    if made.utf8.count <= SharedAccessSignature.maximumLength {
        check((try? verifier.verifySignature(header: made)) != nil, "a token made here does not verify")
    }
}

func fuzzPatch(_ bytes: [UInt8]) {
    guard let json = try? JSONValue(parsing: bytes), let operations = try? InstallationPatchOperation.parseDocument(json)
    else { return }
    var installation = baseInstallation
    guard (try? installation.apply(operations)) != nil else { return }
    roundTrip(installation)
}

func fuzzInstallation(_ bytes: [UInt8]) {
    guard let installation = try? Installation(jsonText: bytes) else { return }
    roundTrip(installation)
}

/// A stored installation reads back equal from its JSON.
func roundTrip(_ installation: Installation) {
    guard let stored = try? installation.validatedForStorage(lastUpdate: "2026-01-01T00:00:00.0000000Z") else { return }
    let again = try? Installation(jsonText: stored.json.text.utf8)
    check(again == stored, "a stored installation does not read back from its JSON")
}

func fuzzAtom(_ text: String) {
    guard let registration = try? Registration(atom: text), var stored = try? registration.validatedForStorage() else {
        return
    }
    stored.registrationId = stored.registrationId ?? "1-2-3"
    let again = try? Registration(atom: stored.requestEntryXML).validatedForStorage()
    check(again?.deviceToken == stored.deviceToken, "the device token does not read back")
    check(again?.tags == stored.tags, "the tags do not read back")
    check(again?.templateName == stored.templateName, "the template name does not read back")
    check(again?.bodyTemplate == stored.bodyTemplate, "the body template does not read back")
    check(again?.apnsHeaders == stored.apnsHeaders, "the APNs headers do not read back")
}

func fuzzSSE(_ bytes: [UInt8]) {
    // The same bytes in one piece and split in two give the same events.
    var whole = ServerSentEventParser()
    let all = try? whole.feed(bytes)
    var split = ServerSentEventParser()
    let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    let first = try? split.feed(bytes[..<cut])
    let second = first == nil ? nil : try? split.feed(bytes[cut...])
    if let all, let first, let second {
        check(all == first + second, "events depend on how the stream was split")
    }
    for event in all ?? [] {
        _ = try? BuiltInPushDelivery(json: JSONValue(parsing: event.data))
    }
}

func fuzzDirectBatch(_ bytes: [UInt8]) {
    // The first line is the Content-Type, the rest the body.
    let newline = bytes.firstIndex(of: 0x0A) ?? bytes.endIndex
    let contentType = String(decoding: bytes[..<newline], as: UTF8.self)
    let body = Array(bytes[min(newline + 1, bytes.endIndex)...])
    guard let batch = try? DirectBatch(parsing: body, contentType: contentType) else { return }
    check(!batch.devices.isEmpty && batch.devices.count <= DirectBatch.maximumDevices, "a batch's devices are out of bounds")
    // What was read, written again, reads back the same (a payload ending in a line break
    // loses it, as any multipart part does).
    guard !batch.payload.hasSuffix("\n"), !batch.payload.hasSuffix("\r"), !batch.payload.contains("--b") else { return }
    let (writtenType, written) = batch.multipart(boundary: "b")
    check((try? DirectBatch(parsing: Array(written.utf8), contentType: writtenType)) == batch, "a batch does not read back")
}

func fuzzPushEndpoint(_ text: String) {
    // IPv6 text: whatever 16 bytes, written and read back, are the same address.
    let bytes = Array(text.utf8.prefix(16))
    if bytes.count == 16 {
        check(PushEndpoint.parseIPv6(ArraySlice(PushEndpoint.ipv6Text(bytes).utf8)) == bytes, "IPv6 text does not read back")
    }
    guard let endpoint = try? PushEndpoint(text) else { return }
    // The canonical spelling is an endpoint too, the same one, and no longer than allowed.
    let again = try? PushEndpoint(endpoint.url)
    check(again == endpoint, "\(endpoint.url) does not read back as the endpoint it came from")
    check((1...65535).contains(endpoint.port), "a port out of range")
    check(endpoint.url.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "the URL holds a byte a request line cannot")
}

func fuzzScheduleTime(_ text: String) {
    guard let date = try? ScheduleTime.parse(text) else { return }
    // Every accepted time is a date the service can write, and writing it back reads the same.
    let written = W3CDate.format(date)
    check(written.count == 28, "\(text) gave a date out of the service's range: \(written)")
    if let again = try? ScheduleTime.parse(written) {
        check(abs(again.timeIntervalSince(date)) < 0.001, "\(written) does not read back as \(text)")
    } else {
        check(false, "\(written), written from \(text), does not read")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    let bytes = start.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    let text = String(decoding: bytes, as: UTF8.self)
    switch fuzzTarget {
    case .tagExpression: fuzzTagExpression(text)
    case .template: fuzzTemplate(text)
    case .json: fuzzJSON(bytes)
    case .xml: fuzzXML(text)
    case .sas: fuzzSAS(text)
    case .jsonPatch: fuzzPatch(bytes)
    case .atom: fuzzAtom(text)
    case .sse: fuzzSSE(bytes)
    case .installation: fuzzInstallation(bytes)
    case .directBatch: fuzzDirectBatch(bytes)
    case .pushEndpoint: fuzzPushEndpoint(text)
    case .scheduleTime: fuzzScheduleTime(text)
    case .keysFile: fuzzKeysFile(bytes)
    case .backupInfo: fuzzBackupInfo(bytes)
    case .storedRows: fuzzStoredRows(bytes)
    }
    return 0
}

// libFuzzer's own main is not linked: a Swift executable has its main, which hands over.
_ = fuzzTarget
var arguments = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argv) { fuzzOne($0, $1) })
