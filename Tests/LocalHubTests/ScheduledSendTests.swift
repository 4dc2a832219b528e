import Foundation
import HubTestSupport
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// Scheduled sends (issue 14, item 7): accepted durably with 201 and a Location, fired when
/// due and not before, cancelled before, each fired once even through a SIGKILL.
@Suite struct ScheduledSendTests {
    @Test(.tags(.live), .fullSuiteOnly) func aScheduledSendIsReportedScheduledThenSentAtItsTimeAndNotBefore() async throws {
        try await TestHub.with { hub in
            let listen = try hub.client(hub.listen)
            let full = try hub.client(hub.full)
            let device = randomDevice()
            try await listen.createOrUpdateInstallation(newsInstallation("t", device: device, tags: ["World"]))
            // Whole seconds (the .NET form has no fraction), two ahead.
            let at = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 2).rounded(.up))
            let receipt = try await full.scheduleSend(.template(["messageParam": "later"]), tagExpression: "World", at: at)
            let id = try #require(receipt.notificationId)
            #expect(receipt.location?.contains("/news/schedulednotifications/\(id)") == true)
            // Read first, then the clock: seen before its time, it was not sent yet.
            let waiting = try await full.notificationDetails(id: id)
            let early = try await listen.inbox(device: device, after: 0, epoch: nil)
            if Date() < at {
                #expect(waiting.state == .scheduled)
                #expect(early.isEmpty)
            }
            let delivered = try await eventually("the scheduled delivery") {
                try await listen.inbox(device: device, after: 0, epoch: nil).first
            }
            #expect(delivered.notificationId == id && delivered.alertText == "later")
            let sentAt = try #require(W3CDate.parse(delivered.deliveredAt))
            #expect(sentAt >= at, "not before its time")
            let done = try await eventually("the scheduled send to be completed") { () -> NotificationDetails? in
                let details = try await full.notificationDetails(id: id)
                return details.state == .completed ? details : nil
            }
            #expect(done.apnsOutcomeCounts == ["Success": 1])
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func aCancelledSendIsNeverSentAndSaysSo() async throws {
        try await TestHub.with { hub in
            let listen = try hub.client(hub.listen)
            let full = try hub.client(hub.full)
            let device = randomDevice()
            try await listen.createOrUpdateInstallation(newsInstallation("t", device: device, tags: ["World"]))
            // Far enough ahead that the cancel comes first on a loaded machine too.
            let now = Date().timeIntervalSince1970.rounded(.up)
            let cancelled = try #require(
                try await full.scheduleSend(
                    .template(["messageParam": "never"]), tagExpression: "World", at: Date(timeIntervalSince1970: now + 8)
                ).notificationId)
            try await full.cancelScheduledSend(id: cancelled)
            // Due after the cancelled one: once it arrived, the cancelled one's time has passed.
            let after = try #require(
                try await full.scheduleSend(
                    .template(["messageParam": "after"]), tagExpression: "World", at: Date(timeIntervalSince1970: now + 9)
                ).notificationId)
            await #expect(throws: HubError.self, "a second cancel finds nothing waiting") {
                try await full.cancelScheduledSend(id: cancelled)
            }
            let inbox = try await eventually("the inbox to hold a delivery") { () -> [BuiltInPushDelivery]? in
                let inbox = try await listen.inbox(device: device, after: 0, epoch: nil)
                return inbox.isEmpty ? nil : inbox
            }
            #expect(inbox.map(\.notificationId) == [after])
            let details = try await full.notificationDetails(id: cancelled)
            #expect(details.state == .cancelled)
            let raw = try await raw(
                .GET, "\(hub.baseURL)/news/messages/\(cancelled)?api-version=2020-06",
                headers: [("Authorization", hub.token(hub.full))])
            #expect(raw.body.contains("<State>Cancelled</State>"), "spelt as .NET's enum reads it")
            await #expect(throws: HubError.self, "a fired send cannot be cancelled") {
                try await full.cancelScheduledSend(id: after)
            }
        }
    }

    @Test func scheduleTimesInBothSDKFormsAndBadOnesRefused() async throws {
        #expect(try ScheduleTime.parse("2026-11-25T18:00:00") == W3CDate.parse("2026-11-25T18:00:00Z"))
        #expect(try ScheduleTime.parse("2026-11-25T18:00:00.250Z") == W3CDate.parse("2026-11-25T18:00:00.25Z"))
        #expect(try ScheduleTime.parse("2026-11-25T19:00:00+01:00") == W3CDate.parse("2026-11-25T18:00:00Z"))
        #expect(throws: ScheduleTime.Refusal.self) { try ScheduleTime.parse("tomorrow") }
        try await RouterHub.with { hub in
            func schedule(_ time: String?, query: String = "") async throws -> RawResponse {
                var headers = [
                    ("Authorization", hub.token(hub.full)), ("ServiceBusNotification-Format", "template"),
                    ("Content-Type", "application/json"),
                ]
                if let time { headers.append(("ServiceBusNotification-ScheduleTime", time)) }
                return try await hub.raw(
                    .POST, "\(hub.baseURL)/news/schedulednotifications/?api-version=2020-06\(query)", headers: headers,
                    body: #"{"messageParam":"x"}"#)
            }
            #expect(try await schedule(nil).status == 400)
            #expect(try await schedule("next tuesday").status == 400)
            #expect(try await schedule(W3CDate.format(Date().addingTimeInterval(8 * 86_400))).status == 400)
            #expect(try await schedule(W3CDate.format(Date().addingTimeInterval(60)), query: "&test").status == 400)
            let accepted = try await schedule(W3CDate.format(Date().addingTimeInterval(3600)))
            #expect(accepted.status == 201)
            let listen = try await hub.raw(
                .POST, "\(hub.baseURL)/news/schedulednotifications?api-version=2020-06",
                headers: [
                    ("Authorization", hub.token(hub.listen)), ("ServiceBusNotification-Format", "template"),
                    ("ServiceBusNotification-ScheduleTime", "2030-01-01T00:00:00"),
                ], body: "{}")
            #expect(listen.status == 403, "scheduling needs Send")
        }
    }

    /// The hub is killed right after accepting; restarted, it sends the scheduled send once
    /// and never the cancelled one.
    @Test(.tags(.live), .fullSuiteOnly) func aScheduledSendSurvivesASIGKILLAndIsSentOnce() async throws {
        let directory = TestHub.temporaryDirectory()
        let first = try await HubProcess.start(directory: directory)
        let device = randomDevice()
        let listen = try HubClient(connectionString: first.listen, retryPolicy: .none)
        try await listen.createOrUpdateInstallation(newsInstallation("t", device: device, tags: ["World"]))
        let full = try HubClient(connectionString: first.full, retryPolicy: .none)
        // The cancelled one far enough ahead that the cancel comes first on a loaded machine.
        let now = Date().timeIntervalSince1970.rounded(.up)
        let cancelled = try #require(
            try await full.scheduleSend(
                .template(["messageParam": "cancelled"]), tagExpression: "World", at: Date(timeIntervalSince1970: now + 8)
            ).notificationId)
        try await full.cancelScheduledSend(id: cancelled)
        let kept = try #require(
            try await full.scheduleSend(
                .template(["messageParam": "kept"]), tagExpression: "World", at: Date(timeIntervalSince1970: now + 2)
            ).notificationId)
        let last = try #require(
            try await full.scheduleSend(
                .template(["messageParam": "last"]), tagExpression: "World", at: Date(timeIntervalSince1970: now + 9)
            ).notificationId)
        await first.kill()

        try await HubProcess.with(directory: directory) { second in
            let token = SharedAccessSignature.make(
                resource: second.listen.hubURL("news"), keyName: second.listen.keyName, key: second.listen.key)
            let stream = try await readStream(
                baseURL: second.state.url, hub: "news", device: device, token: token, count: 2, timeout: 20)
            // Read without deduping: each was sent once.
            #expect(stream.map(\.notificationId) == [kept, last])
            let again = try HubClient(connectionString: second.full, retryPolicy: .none)
            #expect(try await again.notificationDetails(id: cancelled).state == .cancelled)
        }
    }
}

/// Direct batch sends (issue 14, item 7): one payload to up to 1,000 handles.
@Suite struct DirectBatchSendTests {
    @Test(.tags(.live), .fullSuiteOnly) func aBatchOfAThousandHandlesReachesEachOnce() async throws {
        try await TestHub.with { hub in
            let full = try hub.client(hub.full)
            let devices = (0..<1000).map { _ in randomDevice() }
            let receipt = try await full.sendDirectBatch(.apple(payload: #"{"aps":{"alert":"all"}}"#), deviceHandles: devices)
            let id = try #require(receipt.notificationId)
            let details = try await eventually("the send to be completed") { () -> NotificationDetails? in
                let details = try await full.notificationDetails(id: id)
                return details.state == .completed ? details : nil
            }
            #expect(details.apnsOutcomeCounts == ["Success": 1000])
            let listing = try await raw(
                .GET, "\(hub.baseURL)/_sandbox/apns/news/devices", headers: [("Authorization", hub.token(hub.full))])
            let reached = try #require(try JSONValue(parsing: listing.body).arrayValue)
            var counts: [String: String] = [:]
            for entry in reached {
                counts[entry["device"]?.stringValue ?? ""] = entry["deliveries"].flatMap {
                    if case .number(let n) = $0 { n } else { nil }
                }
            }
            #expect(Set(counts.keys) == Set(devices) && counts.values.allSatisfy { $0 == "1" })
        }
    }

    @Test func aBatchIsRefusedWhenItIsNotOne() async throws {
        try await RouterHub.with { hub throws in
            func post(_ query: String, _ contentType: String, _ body: String, format: String = "apple") async throws -> Int {
                try await hub.raw(
                    .POST, "\(hub.baseURL)/news/messages/$batch?api-version=2020-06\(query)",
                    headers: [
                        ("Authorization", hub.token(hub.full)), ("ServiceBusNotification-Format", format),
                        ("Content-Type", contentType),
                    ], body: body
                ).status
            }
            let good = DirectBatch(payload: #"{"aps":{"alert":"x"}}"#, devices: [randomDevice()]).multipart()
            let status1 = try await post("&direct", good.contentType, good.body)
            #expect(status1 == 201)
            let status2 = try await post("", good.contentType, good.body)
            #expect(status2 == 400, "a batch is direct")
            let status3 = try await post("&direct", "application/json", good.body)
            #expect(status3 == 400)
            let status4 = try await post("&direct", good.contentType, good.body, format: "template")
            #expect(status4 == 400)
            let notHex = DirectBatch(payload: #"{"aps":{"alert":"x"}}"#, devices: ["not-hex"]).multipart()
            let status5 = try await post("&direct", notHex.contentType, notHex.body)
            #expect(status5 == 400)
            let notJSON = DirectBatch(payload: "hello", devices: [randomDevice()]).multipart()
            let status6 = try await post("&direct", notJSON.contentType, notJSON.body)
            #expect(status6 == 400)
        }
    }

    /// On `main`, `+99:99` offsets, February 30th, a leap second, a bare date and year 1 were
    /// accepted, and the past ones fired at once.
    @Test func scheduleTimesAreRealDatesAndTheirPastIsShort() async throws {
        for text in [
            "2026-11-25T18:00:00+99:99", "2026-11-25T18:00:00+14:01", "2026-02-30T10:00:00", "2026-11-25T23:59:60Z",
            "2026-11-25", "2026-11-25T24:00:00", "2026-13-01T00:00:00", "2026-11-25T18:00", "2026-11-25T18:00:00.12345678Z",
            "2026-11-25T18:00:00+0100", " 2026-11-25T18:00:00", "２０２６-11-25T18:00:00",
        ] {
            #expect(throws: ScheduleTime.Refusal.self, "\(text)") { try ScheduleTime.parse(text) }
        }
        #expect(try ScheduleTime.parse("2028-02-29T00:00:00Z") == W3CDate.parse("2028-02-29T00:00:00Z"), "a leap day")
        #expect(try ScheduleTime.parse("2026-11-25T04:00:00-14:00") == W3CDate.parse("2026-11-25T18:00:00Z"))
        do {
            _ = try ScheduleTime.parse("2026-11-25T18:00:00+01:60")
            Issue.record("an offset of 60 minutes was read")
        } catch {
            #expect(error.description == "has an offset whose minutes are over 59")
        }
        try await RouterHub.with { hub in
            func schedule(_ time: String) async throws -> RawResponse {
                try await hub.raw(
                    .POST, "\(hub.baseURL)/news/schedulednotifications/?api-version=2020-06",
                    headers: [
                        ("Authorization", hub.token(hub.full)), ("ServiceBusNotification-Format", "template"),
                        ("Content-Type", "application/json"), ("ServiceBusNotification-ScheduleTime", time),
                    ], body: #"{"messageParam":"x"}"#)
            }
            for text in [
                "0001-01-01T00:00:00", "2001-01-01T00:00:00", W3CDate.format(Date().addingTimeInterval(-600)),
                "2026-02-30T10:00:00",
            ] {
                let refused = try await schedule(text)
                #expect(refused.status == 400, "\(text): \(refused.body)")
            }
            let past = try await schedule(W3CDate.format(Date().addingTimeInterval(-120)))
            #expect(past.status == 201, "a time a little past is sent at once: \(past.body)")
        }
    }

    /// Waiting sends kept their bodies in memory: 2,000 of 60 KB each held all their bytes.
    @Test func waitingScheduledSendsHaveAByteBudget() async throws {
        try await RouterHub.with { hub in
            let body = JSONValue.object([("messageParam", .string(String(repeating: "b", count: 60_000)))]).text
            var accepted = 0
            var refusal: RawResponse?
            for _ in 0..<400 {
                let answer = try await hub.raw(
                    .POST, "\(hub.baseURL)/news/schedulednotifications/?api-version=2020-06",
                    headers: [
                        ("Authorization", hub.token(hub.full)), ("ServiceBusNotification-Format", "template"),
                        ("Content-Type", "application/json"),
                        ("ServiceBusNotification-ScheduleTime", W3CDate.format(Date().addingTimeInterval(86_400))),
                    ], body: body)
                if answer.status == 201 {
                    accepted += 1
                } else {
                    refusal = answer
                    break
                }
            }
            #expect((250...290).contains(accepted), "16 MB of 60 KB sends: \(accepted)")
            #expect(refusal?.status == 403 && refusal?.errorDetail?.contains("16 MB") == true, "\(refusal?.body ?? "")")
        }
    }
}
