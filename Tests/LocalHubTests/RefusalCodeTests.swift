import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

/// The hub's refusals carry their reason as a code (`HubRefusalCode`, in `X-Hub-Refusal`),
/// beside the service's XML error, and the client reads it.
@Suite struct RefusalCodeTests {
    @Test func refusalsCarryTheirCode() async throws {
        try await RouterHub.with { hub in
            let listen = [("Authorization", hub.token(hub.listen))]
            let unknown = try await hub.raw(
                .GET, hub.baseURL + BuiltInPushDelivery.path(hub: "news", device: randomDevice(), resource: "inbox"),
                headers: listen)
            #expect(unknown.status == 404)
            #expect(unknown.headers.first(name: HubRefusalCode.header) == HubRefusalCode.deviceNotRegistered.rawValue)
            #expect(unknown.errorDetail?.contains("not registered") == true, "the text stays Azure's shape")
            let noHub = try await hub.raw(
                .GET, hub.baseURL + "/other/installations/x?api-version=2020-06",
                headers: [("Authorization", hub.token(hub.listen, resource: hub.baseURL + "/other"))])
            #expect(noHub.status == 404)
            #expect(noHub.headers.first(name: HubRefusalCode.header) == HubRefusalCode.hubNotFound.rawValue)
            let send = try await hub.raw(
                .POST, hub.baseURL + "/news/messages?api-version=2020-06",
                headers: listen + [("ServiceBusNotification-Format", "template"), ("Content-Type", "application/json")],
                body: "{}")
            #expect(send.status == 401 || send.status == 403)
            #expect(send.headers.first(name: HubRefusalCode.header) == HubRefusalCode.rightsRefused.rawValue)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func theClientReadsTheCode() async throws {
        try await TestHub.with { hub in
            let client = try hub.client(hub.listen)
            do throws(HubError) {
                _ = try await client.inbox(device: randomDevice(), after: 0, epoch: nil)
                Issue.record("the inbox of a device nobody registered answered")
            } catch {
                #expect(error.status == 404)
                #expect(error.refusal == .deviceNotRegistered)
                #expect(error.isDeviceNotRegistered)
            }
        }
    }
}
