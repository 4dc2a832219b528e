import AsyncHTTPClient
import Foundation
import NIOCore
import NotificationHubs

/// A client of the local hub's sandbox push service: this device's stream and inbox.
public struct SandboxClient: Sendable {
    public let endpoint: HubEndpoint
    public let device: String
    let hub: HubClient

    public init(endpoint: HubEndpoint, device: String) {
        self.endpoint = endpoint
        self.device = device.lowercased()
        self.hub = endpoint.listenClient(retry: .none)
    }

    /// The same device on the endpoint's current address (see `HubEndpoint.current`).
    public func current() async throws(Failure) -> SandboxClient {
        guard endpoint.isEmbedded else { return self }
        do throws(HubError) {
            return SandboxClient(endpoint: try await endpoint.current(starting: false), device: device)
        } catch {
            throw Failure(description: error.description, isRefusal: false)
        }
    }

    /// Why a sandbox call failed; `isRefusal` when retrying cannot help.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
        public let isRefusal: Bool

        public init(description: String, isRefusal: Bool) {
            self.description = description
            self.isRefusal = isRefusal
        }
    }

    func url(_ resource: String) -> String {
        let root = endpoint.listen.serviceRoot
        return String(root.dropLast()) + SandboxDelivery.path(hub: endpoint.hubName, device: device, resource: resource)
    }

    /// Opens the device stream after `lastEventId`. 401/403/404 are refusals: a wrong key, or
    /// a hub without a sandbox push service (Azure delivers to real devices only).
    public func openStream(after lastEventId: Int64?, epoch: String?) async throws(Failure) -> HTTPClientResponse {
        var request = HTTPClientRequest(url: url("stream") + Self.epochQuery(epoch, first: true))
        request.headers.add(name: "Authorization", value: await hub.authorizationHeader())
        request.headers.add(name: "Accept", value: "text/event-stream")
        if let lastEventId { request.headers.add(name: "Last-Event-ID", value: String(lastEventId)) }
        let response: HTTPClientResponse
        do {
            response = try await HubClient.sharedHTTPClient.execute(request, deadline: .distantFuture)
        } catch {
            throw Failure(
                description:
                    "cannot reach the hub's push service at \(endpoint.listen.serviceRoot): \(HubClient.describe(error))",
                isRefusal: false)
        }
        switch response.status.code {
        case 200:
            return response
        case 404:
            throw Failure(description: Self.noSandbox, isRefusal: true)
        case 401, 403:
            let body = (try? await response.body.collect(upTo: 64 * 1024)).map { String(buffer: $0) } ?? ""
            throw Failure(
                description: "the hub refused the stream: \(ServiceErrorBody(xml: body)?.detail ?? "\(response.status)")",
                isRefusal: true)
        default:
            throw Failure(description: "the hub's push service answered \(response.status)", isRefusal: false)
        }
    }

    /// `epoch=…`, so a hub whose delivery log was replaced replays everything.
    static func epochQuery(_ epoch: String?, first: Bool) -> String {
        guard let epoch else { return "" }
        return (first ? "?" : "&") + SandboxDelivery.epochParameter + "=" + PercentEncoding.encode(epoch)
    }

    public static let noSandbox =
        "this hub has no sandbox push service: on Azure, notifications arrive on real devices, not in this terminal (use 'send --test' to see the hub's outcome)"

    /// Every delivery after `since`, paging through the inbox.
    public func deliveries(after since: Int64, epoch: String?) async throws(Failure) -> [SandboxDelivery] {
        var all: [SandboxDelivery] = []
        var cursor = since
        var epoch = epoch
        while true {
            var request = HTTPClientRequest(
                url: url("inbox") + "?since=\(cursor)&limit=1000" + Self.epochQuery(epoch, first: false))
            request.headers.add(name: "Authorization", value: await hub.authorizationHeader())
            let text: String
            let status: UInt
            do {
                let response = try await HubClient.sharedHTTPClient.execute(request, timeout: .seconds(30))
                status = response.status.code
                text = String(buffer: try await response.body.collect(upTo: 64 << 20))
            } catch {
                throw Failure(
                    description: "cannot reach the hub at \(endpoint.listen.serviceRoot): \(HubClient.describe(error))",
                    isRefusal: false)
            }
            guard status == 200 else {
                if status == 404 { throw Failure(description: Self.noSandbox, isRefusal: true) }
                throw Failure(
                    description: "the hub answered \(status): \(ServiceErrorBody(xml: text)?.detail ?? text)",
                    isRefusal: status == 401 || status == 403)
            }
            guard let page = try? JSONValue(parsing: text), let items = page["deliveries"]?.arrayValue else {
                throw Failure(description: "the hub's inbox answer is unreadable", isRefusal: false)
            }
            let deliveries = items.compactMap { try? SandboxDelivery(json: $0) }
            all += deliveries
            guard let last = deliveries.last, deliveries.count == 1000 else { return all }
            cursor = last.seq
            epoch = last.epoch
        }
    }
}
