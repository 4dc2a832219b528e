import AsyncHTTPClient
import Foundation
import NIOCore

/// The local hub's built-in push service, through the same client as every other call: this
/// device's stream (an async sequence of deliveries) and its inbox. A hub without a built-in
/// push service (Azure) answers 404.
extension HubClient {
    /// Deliveries to `device` as they arrive, after `lastEventId`; `epoch`, when given, is
    /// the delivery log the id counts in (a replaced log is replayed from its start).
    /// Throws before the first delivery when the stream cannot be opened. The hub ends the
    /// stream when the token that opened it expires; the stream ends itself before, once
    /// that token is due for renewal (`DeviceStream.renewAt`), to be opened again with a
    /// fresh one.
    public func deviceStream(device: String, after lastEventId: Int64?, epoch: String?, secret: String? = nil)
        async throws(HubError) -> DeviceStream
    {
        var headers = ["Accept": "text/event-stream"].merging(Self.claimHeaders(secret)) { $1 }
        if let lastEventId { headers["Last-Event-ID"] = String(lastEventId) }
        let token = await tokens.token(now: Date())
        // A stream silent for three keep-alives is on a node that hung (its port, or a front
        // before it, still holding the connection): it ends, and is opened again elsewhere.
        let response = try await builtInPushCall(
            device: device, resource: "stream", query: Self.epochQuery(epoch), headers: headers, authorization: token.token,
            deadline: .distantFuture, client: http === Self.sharedHTTPClient ? Self.streamHTTPClient : http)
        return DeviceStream(body: response.body, renewAt: token.renewAt)
    }

    /// Claims `device` for the local hub's built-in push service, before it is registered: a
    /// hub that delivers to Apple sends every APNs token but the claimed ones there, and a
    /// terminal's must never go. `secret` is the claim's (what an earlier claim answered),
    /// nil for a first claim. `.claimed` with the secret the hub issued when it issued one
    /// (a first claim, or the first since an upgrade), to be kept and sent with every later
    /// call about the device; `.noBuiltInPush` from a hub without that service, whose devices
    /// are all real: one that answers 404, or any hub not on this machine that refuses the
    /// call (Azure: the path is outside the hub, so a 400, 401 or 403 is as likely). A hub on
    /// this machine that refuses otherwise is an error; 409 when another terminal holds the
    /// claim (a secret that is not its claim's).
    public func claimBuiltInPushDevice(_ device: String, secret: String? = nil) async throws(HubError) -> BuiltInPushClaim {
        do {
            let response = try await call(
                .PUT, BuiltInPushDelivery.path(hub: hubName, device: device), headers: Self.claimHeaders(secret),
                expect: [200, 204])
            let issued = (try? JSONValue(parsing: Array(response.body.utf8)))?["secret"]?.stringValue
            return .claimed(secret: issued.flatMap { BuiltInPushClaim.isSecret($0) ? $0 : nil })
        } catch {
            guard let status = error.status else { throw error }
            if status == 404 || (!connectionString.isLoopback && [400, 401, 403, 405].contains(status)) {
                return .noBuiltInPush
            }
            throw error
        }
    }

    /// Lets the claim of `device` go (a terminal that unregisters, with its claim's `secret`,
    /// or an operator removing a token nobody uses, with a Manage key); false when it was not
    /// claimed (or not by that secret).
    public func releaseBuiltInPushDevice(_ device: String, secret: String? = nil) async throws(HubError) -> Bool {
        do {
            _ = try await call(
                .DELETE, BuiltInPushDelivery.path(hub: hubName, device: device), headers: Self.claimHeaders(secret),
                expect: [200, 204])
            return true
        } catch {
            if error.status == 404 { return false }
            throw error
        }
    }

    static func claimHeaders(_ secret: String?) -> [String: String] {
        secret.map { [BuiltInPushDelivery.claimSecretHeader: $0] } ?? [:]
    }

    /// The devices of the built-in push service (Manage): those claimed, and those with
    /// deliveries, with their counts.
    public func builtInPushDevices() async throws(HubError) -> [(device: String, deliveries: Int, claimed: Bool)] {
        let response = try await call(.GET, "/_sandbox/apns/\(PercentEncoding.encode(hubName))/devices", expect: [200])
        guard let items = (try? JSONValue(parsing: Array(response.body.utf8)))?.arrayValue else {
            throw HubError(.invalidResponse, detail: "the hub's device list is unreadable")
        }
        return items.compactMap { item in
            guard let device = item["device"]?.stringValue, case .number(let count)? = item["deliveries"] else { return nil }
            return (device, Int(count) ?? 0, item["claimed"] == .bool(true))
        }
    }

    /// Every delivery to `device` after `since`, paging through its inbox.
    public func inbox(device: String, after since: Int64, epoch: String?, secret: String? = nil) async throws(HubError)
        -> [BuiltInPushDelivery]
    {
        try await inboxPages(device: device, after: since, epoch: epoch, secret: secret).deliveries
    }

    /// Every delivery to `device` after `since`, and the gap the hub told of first: what its
    /// retention removed after `since` before the device read it (`BuiltInPushGap`), or nil.
    public func inboxPages(device: String, after since: Int64, epoch: String?, secret: String? = nil) async throws(HubError)
        -> DeviceStream.Batch
    {
        var all: [BuiltInPushDelivery] = []
        var gap: BuiltInPushGap?
        var cursor = since
        var epoch = epoch
        while true {
            let response = try await builtInPushCall(
                device: device, resource: "inbox", query: ["since=\(cursor)", "limit=1000"] + Self.epochQuery(epoch),
                headers: Self.claimHeaders(secret), authorization: await authorizationHeader(), deadline: .now() + timeout)
            let body: ByteBuffer
            do {
                body = try await response.body.collect(upTo: 64 << 20)
            } catch {
                throw HubError(.unreachable, detail: "the inbox answer was cut: \(Self.describe(error))")
            }
            guard let page = try? JSONValue(parsing: Array(buffer: body)), let items = page["deliveries"]?.arrayValue else {
                throw HubError(.invalidResponse, detail: "the hub's inbox answer is unreadable")
            }
            let deliveries = items.compactMap { try? BuiltInPushDelivery(json: $0) }
            if gap == nil, let told = page["gap"] { gap = try? BuiltInPushGap(json: told) }
            all += deliveries
            // A full page means there may be more, even if an item of it could not be read:
            // the next page starts where the hub says this one ended.
            guard items.count == 1000, case .number(let text)? = page["next"], let next = Int64(text), next > cursor else {
                return DeviceStream.Batch(gap: gap, deliveries: all)
            }
            cursor = next
            epoch = deliveries.last?.epoch ?? epoch
        }
    }

    static func epochQuery(_ epoch: String?) -> [String] {
        epoch.map { ["\(BuiltInPushDelivery.epochParameter)=\(PercentEncoding.encode($0))"] } ?? []
    }

    /// One call to a device's built-in push resource: authorized like every call (`authorization`
    /// is the token's header), its failures classified like every call's (a status,
    /// unreachable, timed out).
    private func builtInPushCall(
        device: String, resource: String, query: [String], headers: [String: String], authorization: String,
        deadline: NIODeadline, client: HTTPClient? = nil
    ) async throws(HubError) -> HTTPClientResponse {
        let root = connectionString.serviceRoot
        let path = BuiltInPushDelivery.path(hub: hubName, device: device, resource: resource)
        let url = String(root.dropLast()) + path + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Authorization", value: authorization)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response: HTTPClientResponse
        do {
            response = try await (client ?? http).execute(request, deadline: deadline)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            throw HubError(.timedOut, detail: "GET \(path) took too long")
        } catch {
            throw HubError(.unreachable, detail: "GET \(root): \(Self.describe(error))")
        }
        guard response.status.code == 200 else {
            let text = (try? await response.body.collect(upTo: 64 * 1024)).map { String(buffer: $0) } ?? ""
            throw HubError.answered(Int(response.status.code), body: text, fallback: response.status.reasonPhrase) {
                response.headers.first(name: $0)
            }
        }
        return response
    }
}

/// A device's stream of deliveries: the Server-Sent Events the built-in push service writes, parsed as
/// they come, whatever the chunks; each element is what one chunk completed (a burst
/// arrives as one batch), the gap the hub tells of first included. Ends when the hub closes
/// the stream (as it does when the token that opened it expires), or at the first chunk (a
/// keep-alive at the latest) after `renewAt`, when that token is due for renewal: the
/// stream is then to be opened again, resuming where it was. Throws when it is cut or
/// unreadable.
public struct DeviceStream: AsyncSequence, Sendable {
    public typealias Element = Batch
    let body: HTTPClientResponse.Body
    /// When the token that opened the stream is due for renewal, well before it expires; nil
    /// for never.
    public let renewAt: Date?

    public init(body: HTTPClientResponse.Body, renewAt: Date? = nil) {
        self.body = body
        self.renewAt = renewAt
    }

    /// What one chunk of the stream (or an inbox read) completed: the gap the hub told of
    /// (it comes before any delivery), then deliveries.
    public struct Batch: Sendable, Hashable {
        public var gap: BuiltInPushGap?
        public var deliveries: [BuiltInPushDelivery]

        public init(gap: BuiltInPushGap? = nil, deliveries: [BuiltInPushDelivery]) {
            self.gap = gap
            self.deliveries = deliveries
        }
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(chunks: body.makeAsyncIterator(), renewAt: renewAt)
    }

    public struct Iterator: AsyncIteratorProtocol {
        var chunks: HTTPClientResponse.Body.AsyncIterator
        let renewAt: Date?
        var parser = ServerSentEventParser()

        public mutating func next() async throws -> Batch? {
            while let chunk = try await chunks.next() {
                var batch = Batch(deliveries: [])
                for event in try parser.feed(chunk.readableBytesView) {
                    if event.event == BuiltInPushGap.event {
                        // Keeps the furthest gap: the hub tells one, first.
                        if let gap = try? BuiltInPushGap(json: JSONValue(parsing: event.data)),
                            gap.through > (batch.gap?.through ?? -1)
                        {
                            batch.gap = gap
                        }
                    } else if event.event == "notification" || event.event == nil,
                        let delivery = try? BuiltInPushDelivery(json: JSONValue(parsing: event.data))
                    {
                        batch.deliveries.append(delivery)
                    }
                }
                if batch.gap != nil || !batch.deliveries.isEmpty { return batch }
                if let renewAt, Date() >= renewAt { return nil }
            }
            return nil
        }
    }
}
