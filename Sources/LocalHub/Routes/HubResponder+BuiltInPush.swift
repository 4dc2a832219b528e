import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHubs

extension HubResponder {
    /// The terminals' built-in push service, the APNs stand-in, under
    /// `/_sandbox/apns/{hub}/devices` (the wire name stays). A device token names a device, as
    /// on the real service: 32 random bytes that only its terminal and the hub know; a claimed
    /// token's terminal also proves itself with its claim's secret
    /// (`BuiltInPushDelivery.claimSecretHeader`), so a token that leaked opens nothing. What would
    /// reveal or erase other devices' news needs Manage. Tokens are signed for the hub.
    ///
    /// - `PUT …/devices/{token}` (Listen): claims the token for the built-in push service. A
    ///   terminal does so before it registers: on a hub with APNs credentials every token not
    ///   claimed goes to Apple, and a terminal's must never. A first claim is answered 200 with
    ///   `{"device", "secret"}`, once; claiming again with the secret, 204; without it, 409, as
    ///   is a claim of a token an installation or registration uses unclaimed (Azure's hubs
    ///   answer 404). A claim no installation uses and no stream opened on for
    ///   `HubEngine.claimLifetime` is let go. A new claim counts as a new device of its client.
    /// - `DELETE …/devices/{token}` (Listen, with the secret): lets the claim go (the terminal
    ///   unregisters; 204, 404 when not claimed). A device no installation or registration uses
    ///   then loses its deliveries and gap too, so nothing of the terminal is left.
    /// - `GET …/devices/{token}/stream` (Listen, with the secret): Server-Sent Events, resuming
    ///   after `Last-Event-ID`.
    /// - `GET …/devices/{token}/inbox?since=N&limit=M` (Listen, with the secret): the same
    ///   deliveries by polling.
    /// - `GET …/devices` (Manage): devices claimed or with deliveries, their counts and claims.
    /// - `GET …/devices/{token}/deliveries?since=N&limit=M` (Manage): inspect a device, paged.
    /// - `DELETE …/devices/{token}/deliveries` (Manage): reset a device (tests).
    ///
    /// A request about a claimed token without its secret is answered as one about a token
    /// the hub does not know (404); a claim of before secrets asks for none until it is
    /// claimed again. A Manage key needs no secret.
    func addBuiltInPushRoutes(to devices: RouterGroup<HubRequestContext>) {
        let manage = devices.group().add(middleware: Requires(.manage, of: self, audience: .hub))
        manage.get { request, context in try await self.listDevices(HubRequest(request, context), hub: context.hub) }
        for method in [HTTPRequest.Method.put, .post, .delete, .patch] {
            manage.on("", method: method, use: notAllowed("Use GET to list the devices"))
        }
        let listen = devices.group(":token").add(middleware: Requires(.listen, of: self, audience: .hub))
        listen.put { request, context in try await self.claim(HubRequest(request, context), context) }
        listen.delete { request, context in try await self.release(HubRequest(request, context), context) }
        for method in [HTTPRequest.Method.get, .post, .patch] {
            listen.on("", method: method, use: notAllowed("Use PUT to claim a device and DELETE to let it go"))
        }
        listen.get("stream") { request, context in
            let r = HubRequest(request, context)
            return try await self.stream(
                hub: context.hub, device: try context.deviceParameter(), r: r, channel: context.channel,
                credential: context.credential)
        }
        listen.get("inbox") { request, context in try await self.page(HubRequest(request, context), context) }
        let deliveries = devices.group(":token/deliveries").add(middleware: Requires(.manage, of: self, audience: .hub))
        deliveries.get { request, context in try await self.page(HubRequest(request, context), context) }
        deliveries.delete { request, context in
            let deleted = try await self.engine.deliveries.erase(hub: context.hub, device: try context.deviceParameter())
            let json = JSONValue.object([("deleted", .number(String(deleted)))])
            return HubReply.body(.ok, json.text, contentType: "application/json; charset=utf-8", trackingId: context.trackingId)
        }
    }

    /// The devices claimed or with deliveries, their counts and claims.
    func listDevices(_ r: HubRequest, hub: String) async throws -> Response {
        var counts: [String: Int] = [:]
        for (device, count) in try await engine.deliveries.devices(hub: hub) { counts[device] = count }
        let claimed = try await engine.claimedDevices(hub: hub)
        let json = JSONValue.array(
            Set(counts.keys).union(claimed).sorted().map { device in
                .object([
                    ("device", .string(device)), ("deliveries", .number(String(counts[device] ?? 0))),
                    ("claimed", .bool(claimed.contains(device))),
                ])
            })
        return HubReply.body(.ok, json.text, contentType: "application/json; charset=utf-8", trackingId: r.trackingId)
    }

    /// A first claim (or the first of a claim made before claims had secrets) is answered 200
    /// with the claim's secret, once; claiming again with it is answered 204; without it, 409.
    func claim(_ r: HubRequest, _ context: HubRequestContext) async throws -> Response {
        let (hub, device) = (context.hub, try context.deviceParameter())
        try spend(r, bytes: 0, newDevice: try await engine.deviceStanding(hub: hub, device: device) != .claimed)
        let result = try await engine.write(
            .claimDevice(hub: hub, device: device, secret: r.header(BuiltInPushDelivery.claimSecretHeader)))
        guard case .claimed(let secret?) = result else { return HubReply.empty(.noContent, trackingId: r.trackingId) }
        let json = JSONValue.object([("device", .string(device)), ("secret", .string(secret))])
        return HubReply.body(.ok, json.text, contentType: "application/json; charset=utf-8", trackingId: r.trackingId)
    }

    func release(_ r: HubRequest, _ context: HubRequestContext) async throws -> Response {
        let device = try context.deviceParameter()
        try await proveClaim(r, hub: context.hub, device: device, else: Self.notClaimed)
        _ = try await engine.write(.releaseDevice(hub: context.hub, device: device))
        return HubReply.empty(.noContent, trackingId: r.trackingId)
    }

    /// Refuses a request about a claimed device that does not carry its claim's secret, with
    /// the 404 of a device the hub does not know: the token alone opens nothing, and nothing
    /// is said of it. A Manage key (an operator) needs no secret.
    func proveClaim(_ r: HubRequest, hub: String, device: String, else refusal: HubRefusal = unknownDevice) async throws {
        guard !r.rights.contains(.manage) else { return }
        guard try await engine.provesClaim(hub: hub, device: device, secret: r.header(BuiltInPushDelivery.claimSecretHeader))
        else { throw refusal }
    }

    /// What a write naming a claimed device as its push channel shows of its claim.
    func claimProof(_ r: HubRequest) -> ClaimProof {
        if r.rights.contains(.manage) { return .manage }
        return r.header(BuiltInPushDelivery.claimSecretHeader).map(ClaimProof.secret) ?? .none
    }

    /// What a release of a token not claimed (or claimed, asked without its secret) is told.
    static let notClaimed = HubRefusal(.notFound, WriteRefusal.notClaimed, code: .notClaimed)

    /// What a token neither claimed nor registered (or claimed, asked without its secret) is told.
    static let unknownDevice = HubRefusal(
        .notFound,
        "The device is not registered: nothing is delivered to a token that is neither claimed for the built-in "
            + "push service nor the handle of an installation; claim it (PUT) or register it first",
        code: .deviceNotRegistered)

    /// A page of a device's deliveries: its inbox (Listen) or, for an operator, its deliveries.
    func page(_ r: HubRequest, _ context: HubRequestContext) async throws -> Response {
        let device = try context.deviceParameter()
        // A claimed token is read only with its claim's secret, before anything else is done.
        try await proveClaim(r, hub: context.hub, device: device)
        let since = try await resumePoint(r)
        let limit = max(1, min(try pagingNumber(r, "limit") ?? 100, Self.pageLimit))
        let (gap, deliveries) = try await engine.deliveries.backlog(hub: context.hub, device: device, since: since, limit: limit)
        // A token no longer registered keeps what was delivered to it (a terminal that moved to
        // a new token fetches it); one that the hub knows nothing of answers as the stream does,
        // as a claimed one asked without its secret does.
        if !r.rights.contains(.manage), gap == nil, deliveries.isEmpty,
            try await engine.deviceStanding(hub: context.hub, device: device) == .unknown
        {
            throw Self.unknownDevice
        }
        let json = JSONValue.object(dropping: [
            ("deliveries", .array(deliveries.map { $0.builtInPushDelivery(epoch: engine.epoch).json })),
            ("epoch", .string(engine.epoch)),
            ("next", .number(String(deliveries.last?.seq ?? max(since, gap?.through ?? since)))),
            ("gap", gap?.json),
        ])
        return HubReply.body(.ok, json.text, contentType: "application/json; charset=utf-8", trackingId: r.trackingId)
    }

    /// Most deliveries one inbox or deliveries page holds: at most 1,000 × 4 KB payloads.
    static let pageLimit = 1000

    /// `Last-Event-ID`, or `since` / `lastEventId` in the query; 0 for everything, for a
    /// resume point of another epoch (the log it counted in is gone), and for one past every
    /// number this log has given (`DeliveryLog.resumePoint`): the device reads the log again
    /// from its start, and dedupes.
    func resumePoint(_ r: HubRequest) async throws -> Int64 {
        if let epoch = r.query[BuiltInPushDelivery.epochParameter] ?? r.header("X-Hub-Epoch"), !epoch.isEmpty,
            epoch != engine.epoch
        {
            return 0
        }
        guard let text = r.header("Last-Event-ID") ?? r.query["since"] ?? r.query["lasteventid"], !text.isEmpty else { return 0 }
        guard let value = Int64(text.trimmingCharacters(in: .whitespaces)), value >= 0 else {
            throw HubRefusal.badRequest("The resume point '\(text.prefix(40))' is not a delivery sequence number")
        }
        return try await engine.deliveries.resumePoint(after: value)
    }

    /// The device stream: the backlog after `since`, then live deliveries as they become
    /// durable, with keep-alive comments while idle. Ends when the client goes away, the hub
    /// shuts down, or the token that opened it expires (its `se`): it ends as any stream
    /// does, and its client opens it again with a fresh token, resuming where it was.
    func stream(
        hub: String, device: String, r: HubRequest, channel: any Channel, credential: StreamCredential? = nil
    ) async throws -> Response {
        let (request, trackingId) = (r.request, r.trackingId)
        let standing = try await engine.deviceStanding(hub: hub, device: device)
        guard standing != .unknown else { throw Self.unknownDevice }
        if standing == .claimed { try await proveClaim(r, hub: hub, device: device) }
        // Read once the device is known and its claim proven.
        let since = try await resumePoint(r)
        let client = r.client.key
        let log = engine.deliveries
        // The stream takes its place before it is answered, in one step with the check, so that
        // streams opened at once cannot all pass it (a client over its share got 200s under load).
        // What is published meanwhile waits in the sink until the backlog is written. A HEAD
        // writes no body, so it is only checked.
        let stream: (id: Int, unrecorded: [Delivery], sink: ChannelStreamSink)?
        do throws(DeviceStreams.ListenRefusal) {
            if request.method == .get {
                let sink = ChannelStreamSink(
                    channel: channel, epoch: log.epoch, limit: log.streamBufferLimit, mayWriteChunks: true)
                let (id, unrecorded) = try log.listen(
                    hub: hub, device: device, sink: sink, client: client, claimed: standing == .claimed,
                    credential: credential)
                stream = (id, unrecorded, sink)
                // Should the body never run, the place is given back when the connection closes.
                channel.closeFuture.whenComplete { _ in log.cancel(hub: hub, device: device, id: id) }
            } else {
                if let refusal = log.refusal(hub: hub, device: device, client: client, claimed: standing == .claimed) {
                    throw refusal
                }
                stream = nil
            }
        } catch {
            throw Self.streamRefusal(error, log: log, client: client)
        }
        // The backlog's first page is read before the stream is answered. A 200 says the stream
        // is established: what is published after it reaches the device at once (read after the
        // answer, streams opened together went live only once every backlog read queued before
        // theirs was done, well after their 200s).
        // A database that cannot be read is a 503 the client can retry, not a 200 cut short.
        let first: (gap: BuiltInPushGap?, deliveries: [Delivery])?
        if let stream {
            do {
                first = try await log.backlog(hub: hub, device: device, since: since, limit: Self.backlogPage)
            } catch {
                log.cancel(hub: hub, device: device, id: stream.id)
                throw error
            }
        } else {
            first = nil
        }
        engine.streamOpened(hub: hub, device: device)
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream; charset=utf-8"
        headers[.cacheControl] = "no-cache"
        headers[HTTPField.Name("X-Accel-Buffering")!] = "no"
        headers[HTTPField.Name("TrackingId")!] = trackingId
        let body = ResponseBody { writer in
            guard let stream, let first else {
                try await writer.finish(nil)
                return
            }
            defer { log.cancel(hub: hub, device: device, id: stream.id) }
            // What a token opened lasts as long as the token.
            let id = stream.id
            let expiry = credential?.expiry.map { expiry in
                channel.eventLoop.scheduleTask(in: Self.timeLeft(until: expiry)) { log.cancel(hub: hub, device: device, id: id) }
            }
            defer { expiry?.cancel() }
            // Stop as soon as the client goes away, not at the next keep-alive.
            try await request.body.consumeWithCancellationOnInboundClose { _ in
                let last = try await Self.writeBacklog(
                    first, to: &writer, log: log, hub: hub, device: device, after: since)
                await stream.sink.goLive(after: last, pending: stream.unrecorded)
                await stream.sink.waitUntilEnded()
            }
            await stream.sink.close()
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// The time from now to `expiry` (Unix seconds), none when it is past, and at most
    /// ten years, so that a token made to last for ever does not overflow the timer.
    static func timeLeft(until expiry: Double, now: Date = Date()) -> TimeAmount {
        let seconds = min(max(0, expiry - now.timeIntervalSince1970), 10 * 365 * 86_400)
        return .milliseconds(Int64(seconds * 1000))
    }

    /// Why a stream is refused, as the client is told.
    static func streamRefusal(_ refusal: DeviceStreams.ListenRefusal, log: DeliveryLog, client: String) -> HubRefusal {
        switch refusal {
        case .tooManyStreams:
            var refusal = HubRefusal(
                .tooManyRequests,
                "The device has \(log.maximumStreamsPerDevice) streams open already; close one or resume it later")
            refusal.headers[.retryAfter] = "5"
            return refusal
        case .clientLimit:
            var refusal = HubRefusal(
                .tooManyRequests,
                "This client (\(client)) has \(log.maximumStreamsPerClient) streams open, the most one client may; close one first"
            )
            refusal.headers[.retryAfter] = "30"
            return refusal
        case .full:
            var refusal = HubRefusal(
                .serviceUnavailable, "The hub has \(log.maximumStreams) streams open, the most it serves; try again later")
            refusal.headers[.retryAfter] = "30"
            return refusal
        case .closed:
            var refusal = HubRefusal(.serviceUnavailable, "The hub is shutting down; try again in a moment")
            refusal.headers[.retryAfter] = "5"
            return refusal
        }
    }

    /// Deliveries a stream's backlog reads at a time.
    static let backlogPage = 500

    /// Writes the stream's preamble and its backlog: `first`, read before the answer, then
    /// the pages after it from the database; returns the newest delivery written. Live
    /// events, and those published before their commit, are the sink's to write
    /// (`ChannelStreamSink.goLive`).
    private static func writeBacklog(
        _ first: (gap: BuiltInPushGap?, deliveries: [Delivery]), to writer: inout any ResponseBodyWriter, log: DeliveryLog,
        hub: String, device: String, after since: Int64
    ) async throws -> Int64 {
        var last = since
        let (epoch, page) = (log.epoch, Self.backlogPage)
        try await writer.write(ByteBuffer(string: "retry: 1000\n: connected to \(hub)/\(device)\n\n"))
        // What retention removed before the device read it is said first, never skipped
        // silently; it comes with the first page.
        if let gap = first.gap {
            try await writer.write(ByteBuffer(string: gap.serverSentEvent))
            last = max(last, gap.through)
        }
        var shapes = FrameShapes()
        var backlog = first.deliveries
        while let newest = backlog.last {
            var frames = ByteBuffer()
            for delivery in backlog {
                shapes.shape(of: delivery, epoch: epoch).write(seq: delivery.seq, device: delivery.device, to: &frames)
            }
            try await writer.write(frames)
            last = newest.seq
            if backlog.count < page { break }
            backlog = try await log.page(hub: hub, device: device, after: last, limit: page)
        }
        return last
    }
}
