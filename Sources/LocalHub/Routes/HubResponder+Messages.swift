import Foundation
import HTTPTypes
import Hummingbird
import NotificationHubs

extension HubResponder {
    /// `/{hub}/messages` (POST), `…/messages/$batch` (POST), `/{hub}/schedulednotifications`
    /// (POST) and its `{id}` (DELETE) need Send; `…/messages/{id}` (GET), a notification's
    /// telemetry with its body, needs Manage (wire spec §3.4).
    func addMessageRoutes(to hub: RouterGroup<HubRequestContext>) {
        hub.group().add(middleware: Requires(.manage, of: self)).get("messages/:id") { request, context in
            try await self.notificationDetails(HubRequest(request, context), hub: context.hub, id: try context.parameter("id"))
        }
        let send = hub.group().add(middleware: Requires(.send, of: self))
        send.post("messages") { request, context in try await self.send(HubRequest(request, context), hub: context.hub) }
        send.post("messages/$batch") { request, context in
            try await self.batchSend(HubRequest(request, context), hub: context.hub)
        }
        send.post("schedulednotifications") { request, context in
            try await self.schedule(HubRequest(request, context), hub: context.hub)
        }
        send.delete("schedulednotifications/:id") { request, context in
            try await self.engine.cancelScheduled(hub: context.hub, id: try context.parameter("id"))
            return HubReply.empty(.ok, trackingId: context.trackingId)
        }
        let scheduledOnly =
            "Scheduled sends are made with POST …/schedulednotifications and cancelled with DELETE …/{id}"
        send.on("schedulednotifications", method: .get, use: notAllowed(scheduledOnly))
        send.on("schedulednotifications", method: .delete, use: notAllowed(scheduledOnly))
        send.on("schedulednotifications/:id", method: .get, use: notAllowed(scheduledOnly))
        send.on("schedulednotifications/:id", method: .post, use: notAllowed(scheduledOnly))
    }

    /// `POST /{hub}/messages`: template or native sends to a tag expression or to everyone,
    /// `direct` sends to one handle, `test` sends answered with their outcome. Every accepted
    /// send is durable before its 201.
    func send(_ r: HubRequest, hub: String) async throws -> Response {
        let notification = try await acceptedNotification(r, hub: hub, scheduled: false)
        var fields = HTTPFields()
        fields[.location] = "\(baseURL(r))/\(hub)/messages/\(notification.id)?api-version=\(r.apiVersion ?? "2020-06")"
        if notification.isTest {
            var outcome = try await engine.enqueueTest(notification)
            if !r.rights.contains(.manage) { outcome = engine.outcomeWithTerminalHandlesCut(outcome, hub: hub) }
            return HubReply.body(
                .created, outcome.xml, contentType: "application/xml; charset=utf-8", trackingId: r.trackingId, headers: fields)
        }
        try await engine.enqueue(notification)
        fields[.contentType] = "application/xml; charset=utf-8"
        return HubReply.empty(.created, trackingId: r.trackingId, headers: fields)
    }

    /// `POST /{hub}/schedulednotifications`: a send as to `messages`, fired at
    /// `ServiceBusNotification-ScheduleTime` (`ScheduleTime`: .NET's zone-less
    /// `yyyy-MM-ddTHH:mm:ss` as UTC, JS's ISO form with milliseconds and `Z`, or an offset
    /// within ±14:00), at most 7 days ahead; a time up to `latePast` (5 minutes) gone fires at
    /// once, an older one is refused. 201 with `Location` `…/schedulednotifications/{id}`; the
    /// id is also the notification's for `GET …/messages/{id}` (state `Scheduled`, then as any
    /// send). `DELETE …/schedulednotifications/{id}` cancels it (200; 404 once fired or
    /// cancelled).
    func schedule(_ r: HubRequest, hub: String) async throws -> Response {
        guard let timeText = r.header("ServiceBusNotification-ScheduleTime") else {
            throw HubRefusal.badRequest("A scheduled send needs the ServiceBusNotification-ScheduleTime header (UTC)")
        }
        let at: Date
        do {
            at = try ScheduleTime.parse(timeText.trimmingCharacters(in: .whitespaces))
        } catch {
            let shown = String(
                timeText.unicodeScalars.prefix(40).map { $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" })
            throw HubRefusal.badRequest("The ServiceBusNotification-ScheduleTime '\(shown)' \(error)")
        }
        guard at.timeIntervalSinceNow <= HubEngine.longestSchedule else {
            throw HubRefusal.badRequest("A send may be scheduled at most 7 days ahead")
        }
        guard at.timeIntervalSinceNow >= -Self.latePast else {
            throw HubRefusal.badRequest(
                "The ServiceBusNotification-ScheduleTime '\(timeText)' is more than 5 minutes past; send it now instead")
        }
        var notification = try await acceptedNotification(r, hub: hub, scheduled: true)
        notification.scheduledFor = at
        try await engine.schedule(notification)
        var fields = HTTPFields()
        fields[.location] =
            "\(baseURL(r))/\(hub)/schedulednotifications/\(notification.id)?api-version=\(r.apiVersion ?? "2020-06")"
        fields[.contentType] = "application/xml; charset=utf-8"
        return HubReply.empty(.created, trackingId: r.trackingId, headers: fields)
    }

    /// How long past a schedule time may be and still be sent (at once): a clock a little
    /// behind, or a request a little slow.
    static let latePast: TimeInterval = 300

    /// A send's request checked and made a notification (not yet accepted): the format, a
    /// direct handle (not for scheduled sends), the tags, and a body of the format's kind.
    private func acceptedNotification(_ r: HubRequest, hub: String, scheduled: Bool) async throws -> StoredNotification {
        guard let formatText = r.header("ServiceBusNotification-Format") else {
            throw HubRefusal.badRequest("The ServiceBusNotification-Format header is missing (template, apple, gcm, fcmv1, …)")
        }
        guard let format = NotificationFormat(wireValue: formatText) else {
            throw HubRefusal.badRequest("The ServiceBusNotification-Format '\(formatText)' is not a known format")
        }
        let isDirect = r.flag("direct")
        let isTest = r.flag("test")
        if scheduled, isDirect || isTest {
            throw HubRefusal.badRequest("A scheduled send goes to tags or to everyone; it cannot be direct or a test")
        }
        let handle = r.header("ServiceBusNotification-DeviceHandle")
        let tagsHeader = r.header("ServiceBusNotification-Tags")
        if isDirect {
            guard let handle, !handle.isEmpty else {
                throw HubRefusal.badRequest("A direct send needs the ServiceBusNotification-DeviceHandle header")
            }
            guard format != .template else { throw HubRefusal.badRequest("A direct send takes a native format, not template") }
            guard tagsHeader == nil else {
                throw HubRefusal.badRequest(
                    "A direct send goes to one device handle; it cannot also have ServiceBusNotification-Tags")
            }
            try Self.checkDirectHandle(handle, format: format, r)
        } else if handle != nil {
            throw HubRefusal.badRequest("ServiceBusNotification-DeviceHandle is only for direct sends (add ?direct)")
        }
        var expression: TagExpression?
        if let tagsHeader {
            do {
                expression = try TagExpression(parsing: tagsHeader)
            } catch {
                throw HubRefusal.badRequest("The ServiceBusNotification-Tags header is invalid: \(error)")
            }
        }
        if let contentType = r.contentType, !contentType.contains("json"), format == .template || format == .apple {
            throw HubRefusal.badRequest("A \(format.rawValue) send needs a JSON body, but Content-Type is '\(contentType)'")
        }
        let bytes = try await body(r)
        let text = try Self.payloadText(bytes)
        if format == .template {
            do {
                _ = try TemplateProperties(json: JSONValue(parsing: bytes))
            } catch let error as JSONParseError {
                throw HubRefusal.badRequest("A template send's body must be a JSON object of string properties: \(error)")
            } catch {
                throw HubRefusal.badRequest("\(error)")
            }
        }
        var headers: [String: String] = [:]
        for field in r.request.headers {
            let name = field.name.canonicalName
            if name.hasPrefix("apns-") || Self.webPushHeaders.contains(name) { headers[name] = field.value }
        }
        return StoredNotification(
            hub: hub, id: engine.makeNotificationId(), format: format, tagExpression: expression.map { _ in tagsHeader! },
            body: text, headers: headers, directHandle: isDirect ? handle : nil, isTest: isTest)
    }

    /// `GET /_inspect/{hub}/messages/{id}` (Manage: it names installations): why the send
    /// reached whom it reached (`SendExplanation`), as JSON.
    func explain(_ r: HubRequest, hub: String, id: String) async throws -> Response {
        guard let explanation = try await engine.explain(hub: hub, id: id) else {
            throw HubRefusal(.notFound, "The notification '\(id)' was not found")
        }
        return HubReply.body(
            .ok, explanation.json.prettyText, contentType: "application/json; charset=utf-8", trackingId: r.trackingId)
    }

    /// A payload as the hub keeps it and hands it to push services: UTF-8 text free of NUL,
    /// which no store and no push service keeps intact.
    static func payloadText(_ bytes: some Collection<UInt8>) throws -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw HubRefusal.badRequest("The notification body is not UTF-8 text")
        }
        if let bad = StoredText.forbidden(in: text, body: true) {
            throw HubRefusal.badRequest("The notification body holds \(StoredText.describe(bad)), which no payload may carry")
        }
        return text
    }

    /// `POST /{hub}/messages/$batch?direct` (Send): one native payload to up to 1,000 device
    /// handles, as `multipart/mixed` (`DirectBatch`); APNs tokens or FCM registration tokens.
    /// 201 with `Location` `…/messages/{id}` (the service writes `…/messages/$batch/{id}`,
    /// which the JS SDK misreads; this form both SDKs read, and it answers for telemetry).
    func batchSend(_ r: HubRequest, hub: String) async throws -> Response {
        guard r.flag("direct") else {
            throw HubRefusal.badRequest("A batch send is direct: add ?direct (sends to tags go to …/messages)")
        }
        guard let formatText = r.header("ServiceBusNotification-Format"), let format = NotificationFormat(wireValue: formatText),
            format == .apple || format == .fcmV1
        else {
            throw HubRefusal.badRequest("The local hub sends direct batches with ServiceBusNotification-Format apple or fcmv1")
        }
        guard let contentType = r.contentType else {
            throw HubRefusal.badRequest("A batch send's Content-Type is multipart/mixed with a boundary")
        }
        // Room for the handles besides the payload: 1,000 of up to a kilobyte each.
        let bytes = try await body(r, extra: DirectBatch.maximumDevices * 1024)
        let batch: DirectBatch
        do {
            batch = try DirectBatch(parsing: bytes, contentType: contentType)
        } catch {
            throw HubRefusal.badRequest("The batch is not readable: \(error)")
        }
        guard batch.payload.utf8.count <= configuration.maximumBodyBytes else {
            throw HubRefusal(.contentTooLarge, "The batch's notification is larger than \(configuration.maximumBodyBytes) bytes")
        }
        let text = try Self.payloadText(batch.payload.utf8)
        guard (try? JSONValue(parsing: text)) != nil else { throw HubRefusal.badRequest("The batch's notification is not JSON") }
        for handle in batch.devices { try Self.checkDirectHandle(handle, format: format, r) }
        var headers: [String: String] = [:]
        for field in r.request.headers where field.name.canonicalName.hasPrefix("apns-") {
            headers[field.name.canonicalName] = field.value
        }
        var notification = StoredNotification(
            hub: hub, id: engine.makeNotificationId(), format: format, tagExpression: nil, body: text, headers: headers)
        notification.batchHandles = batch.devices
        try await engine.enqueue(notification)
        var fields = HTTPFields()
        fields[.location] = "\(baseURL(r))/\(hub)/messages/\(notification.id)?api-version=\(r.apiVersion ?? "2020-06")"
        fields[.contentType] = "application/xml; charset=utf-8"
        return HubReply.empty(.created, trackingId: r.trackingId, headers: fields)
    }

    /// The headers a browser send passes on to its Web Push service (`P256DH` and `Auth`
    /// name a direct send's keys).
    static let webPushHeaders: Set<String> = ["ttl", "urgency", "topic", "p256dh", "auth"]

    /// A direct send's handle: an APNs token in hexadecimal, an FCM registration token, or a
    /// browser's https endpoint with its `P256DH` and `Auth` keys in headers.
    static func checkDirectHandle(_ handle: String, format: NotificationFormat, _ r: HubRequest) throws {
        switch format {
        case .apple:
            guard DeviceToken.isValid(handle) else {
                throw HubRefusal.badRequest("'\(handle)' is not an APNs device token in hexadecimal")
            }
        case .fcmV1:
            guard handle.utf8.count <= 4096, handle.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
                throw HubRefusal.badRequest("An FCM registration token is up to 4096 printable ASCII characters")
            }
        case .browser:
            do throws(InstallationError) {
                try WebPushSubscription.check(
                    endpoint: handle, p256dh: r.header("P256DH") ?? "", auth: r.header("Auth") ?? "")
            } catch {
                throw HubRefusal.badRequest(
                    "A direct send to a browser names its push subscription (the ServiceBusNotification-DeviceHandle "
                        + "endpoint, P256DH and Auth headers): \(error.description.replacingOccurrences(of: "the pushChannel ", with: "the "))"
                )
            }
        default:
            throw HubRefusal.badRequest("The local hub sends direct with format apple, fcmv1 or browser")
        }
    }

    /// `GET /{hub}/messages/{id}` (Manage): the notification's state, body and outcomes.
    func notificationDetails(_ r: HubRequest, hub: String, id: String) async throws -> Response {
        guard let n = try await engine.notification(hub: hub, id: id) else {
            throw HubRefusal(.notFound, "The notification '\(id)' was not found")
        }
        let counts = OutcomeKey.byPlatform(n.outcomeCounts)
        // A template send names the formats it was rendered for (none before it is
        // dispatched, or when nothing matched); a native send its one format.
        let targets =
            n.format == .template
            ? Set(counts.keys.map(\.nativeFormat.rawValue)).sorted().joined(separator: ",") : n.format.rawValue
        let details = NotificationDetails(
            notificationId: n.id, location: "\(baseURL(r))/\(hub)/messages/\(n.id)", state: n.state,
            enqueueTime: W3CDate.format(n.enqueued), startTime: n.started.map(W3CDate.format),
            endTime: n.ended.map(W3CDate.format), notificationBody: n.body, tags: n.tagExpression, targetPlatforms: targets,
            outcomeCounts: counts)
        return HubReply.body(.ok, details.xml, contentType: "application/xml; charset=utf-8", trackingId: r.trackingId)
    }
}
