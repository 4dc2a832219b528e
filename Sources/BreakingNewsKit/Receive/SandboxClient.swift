import Foundation
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

    /// The same device on the endpoint's current address (see `HubEndpoint.current`), which
    /// starts a hub only as `starting` says.
    public func current(starting: HubEndpoint.Start = .never) async throws(Failure) -> SandboxClient {
        guard endpoint.isEmbedded else { return self }
        do throws(HubError) {
            return SandboxClient(endpoint: try await endpoint.current(starting: starting), device: device)
        } catch {
            throw Failure(description: error.description, isRefusal: false)
        }
    }

    /// Why a sandbox call failed; `isRefusal` when retrying cannot help; `notRegistered`
    /// when the hub knows nothing of the device yet.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
        public let isRefusal: Bool
        public let notRegistered: Bool

        public init(description: String, isRefusal: Bool, notRegistered: Bool = false) {
            self.description = description
            self.isRefusal = isRefusal
            self.notRegistered = notRegistered
        }
    }

    /// Opens the device stream after `lastEventId`. 401/403/404 are refusals: a wrong key, or
    /// a hub without a sandbox push service (Azure delivers to real devices only).
    public func stream(after lastEventId: Int64?, epoch: String?) async throws(Failure) -> DeviceStream {
        do throws(HubError) {
            return try await hub.deviceStream(device: device, after: lastEventId, epoch: epoch)
        } catch {
            throw Self.failure(error, doing: "the stream")
        }
    }

    /// What the receiver says while the hub knows nothing of this device yet (the stream
    /// answered 404 saying so): retried, and tried at once after the next registration.
    public static let notRegistered = "not registered yet: subscribe to receive news here"

    public static let noSandbox =
        "this hub has no sandbox push service: on Azure, notifications arrive on real devices, not in this terminal (use 'send --test' to see the hub's outcome)"

    /// Every delivery after `since`, paging through the inbox.
    public func deliveries(after since: Int64, epoch: String?) async throws(Failure) -> [SandboxDelivery] {
        do throws(HubError) {
            return try await hub.inbox(device: device, after: since, epoch: epoch)
        } catch {
            throw Self.failure(error, doing: "the inbox")
        }
    }

    /// A hub error as the receiver reports it: refusals (a wrong key, no sandbox) stop it,
    /// anything else is retried.
    static func failure(_ error: HubError, doing what: String) -> Failure {
        switch error.status {
        case 404 where error.detail.contains("not registered"):
            return Failure(description: notRegistered, isRefusal: false, notRegistered: true)
        case 404: return Failure(description: noSandbox, isRefusal: true)
        case 401, 403: return Failure(description: "the hub refused \(what): \(error.detail)", isRefusal: true)
        default: return Failure(description: "\(what) failed: \(error)", isRefusal: false)
        }
    }
}
