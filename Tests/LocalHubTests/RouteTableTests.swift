import Foundation
import HTTPTypes
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import NotificationHubs
import Testing

@testable import LocalHub

/// The route table in process, on the memory store, without a socket: what each path and
/// method comes to before any handler logic, and what `/metrics` calls it.
@Suite struct RouteTableTests {
    /// Runs `body` against the hub's router with one hub, `news`.
    func withRouter(_ body: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        try await RouterHub.with { hub in try await body(hub.client) }
    }

    static func detail(_ response: TestResponse) -> String {
        ServiceErrorBody(xml: String(buffer: response.body))?.detail ?? ""
    }

    @Test(arguments: [
        ("GET", "/unknown/installations/x", 404, "The messaging entity 'unknown' could not be found"),
        ("POST", "/news/installations/x", 405, "The method POST is not allowed"),
        ("PUT", "/NEWS/Registrations", 405, "The method PUT is not allowed"),
        ("GET", "/news/nothing", 404, "No resource at /news/nothing"),
        ("GET", "/news/installations/x?api-version=1999-01", 400, "The api-version '1999-01'"),
        // Matched ignoring case, then refused for want of a token.
        ("GET", "/NeWs/INSTALLATIONS/x", 401, ""),
        ("POST", "/news/MESSAGES/$batch", 401, ""),
        ("GET", "/news/schedulednotifications/abc", 401, ""),
        ("GET", "/_sandbox/apns/news/devices", 401, ""),
        ("GET", "/_sandbox/else", 404, "The built-in push service serves"),
        ("POST", "/_sandbox/apns/news/devices", 401, ""),
        ("HEAD", "/healthz", 200, ""),
    ])
    func eachPathAndMethodComesToTheRightAnswer(method: String, path: String, status: Int, detail: String) async throws {
        try await withRouter { client in
            try await client.execute(
                uri: path, method: HTTPRequest.Method(method)!, headers: [HTTPField.Name("TrackingId")!: "t-1"]
            ) { response in
                #expect(Int(response.status.code) == status, "\(method) \(path): \(String(buffer: response.body))")
                #expect(Self.detail(response).hasPrefix(detail))
                #expect(response.headers[HTTPField.Name("TrackingId")!] == "t-1")
                if status >= 400 { #expect(response.headers[.contentType]?.hasPrefix("application/xml") == true) }
            }
        }
    }

    /// Every 405 is made one way, whether a route refuses the method or no route takes it:
    /// the method and the path, then what to use instead when the route knows.
    @Test func everyMethodNotAllowedNamesTheMethodAndThePath() async throws {
        try await RouterHub.with { hub in
            let full = [("Authorization", hub.token(hub.full))]
            let scheduled = try await hub.raw(
                .GET, "\(hub.baseURL)/news/schedulednotifications?api-version=2020-06", headers: full)
            #expect(scheduled.status == 405)
            #expect(
                scheduled.errorDetail?.hasPrefix(
                    "The method GET is not allowed on /news/schedulednotifications. Scheduled sends are made with POST")
                    == true, "\(scheduled.body)")
            let devices = try await hub.raw(.POST, "\(hub.baseURL)/_sandbox/apns/news/devices", headers: full)
            #expect(devices.status == 405)
            #expect(
                devices.errorDetail?.hasPrefix(
                    "The method POST is not allowed on /_sandbox/apns/news/devices. Use GET to list the devices.") == true,
                "\(devices.body)")
            let unrouted = try await hub.raw(.POST, "\(hub.baseURL)/news/installations/x?api-version=2020-06", headers: full)
            #expect(unrouted.status == 405)
            #expect(unrouted.errorDetail?.hasPrefix("The method POST is not allowed on /news/installations/x") == true)
        }
    }

    /// A refusal is an `HTTPResponseError`: wherever it is thrown, even on a router without
    /// the hub's front, the client gets the service's XML error with its status.
    @Test func aRefusalRendersTheServicesErrorOnItsOwn() async throws {
        let router = Router(context: HubRequestContext.self)
        router.get("/conflict") { _, _ -> Response in throw HubRefusal(.conflict, "Already there") }
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/conflict", method: .get) { response in
                #expect(response.status == .conflict)
                #expect(response.headers[.contentType]?.hasPrefix("application/xml") == true)
                #expect(Self.detail(response).hasPrefix("Already there."))
                #expect(response.headers[HTTPField.Name("TrackingId")!]?.isEmpty == false)
            }
        }
    }

    @Test func healthAndMetricsNameEachRouteAsBefore() async throws {
        try await withRouter { client in
            try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/news/installations/abc", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/news/bogus", method: .get) { #expect($0.status == .notFound) }
            let device = String(repeating: "ab", count: 32)
            try await client.execute(uri: "/_sandbox/apns/news/devices/\(device)/stream", method: .get) {
                #expect($0.status == .unauthorized)
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                let text = String(buffer: response.body)
                #expect(text.contains(#"route="/healthz",method="GET",status="200""#))
                #expect(text.contains(#"route="/{hub}/installations/{id}",method="GET",status="401""#))
                #expect(text.contains(#"route="unknown",method="GET",status="404""#))
                #expect(text.contains(#"route="unknown",method="GET",status="401""#) || text.contains("/_sandbox/apns"))
                #expect(!text.contains(#"route="/unknown""#))
            }
        }
    }
}

/// Tracking ids the hub makes when a client sent none.
@Suite struct TrackingIdTests {
    @Test func newIdsAreUUIDShapedAndNeverRepeat() {
        let ids = (0..<50_000).map { _ in HubRequest.newTrackingId() }
        #expect(Set(ids).count == ids.count)
        for id in ids.prefix(1000) + ids.suffix(10) {
            #expect(UUID(uuidString: id) != nil, "\(id)")
            #expect(id == id.lowercased())
            let parts = id.split(separator: "-")
            #expect(parts.map(\.count) == [8, 4, 4, 4, 12])
            #expect(parts[2].first == "4")
            #expect("89ab".contains(parts[3].first!))
        }
    }

    /// Issue 44: ids were a base and a counter, so two ids told how many requests came
    /// between. Every one of the 122 free bits now changes, and consecutive ids differ by
    /// no common step.
    @Test func idsTellNothingOfEachOtherOrOfTheRequestRate() {
        let values = (0..<2_000).map { _ in
            UInt128(HubRequest.newTrackingId().filter { $0 != "-" }, radix: 16)!
        }
        #expect(Set(values).count == values.count)
        let steps = zip(values.dropFirst(), values).map { $0 &- $1 }
        #expect(Set(steps).count > steps.count / 2, "consecutive ids differ by a common step")
        let fixed: UInt128 = 0xf000 << 64 | 0xc000 << 48
        let changed = values.reduce(UInt128(0)) { $0 | ($1 ^ values[0]) }
        #expect(changed.nonzeroBitCount == 122, "bits that never change: \(String(~changed & ~fixed, radix: 16))")
    }
}
