import Foundation
import NotificationHubs

/// A client of the local hub's built-in push service: this device's stream and inbox, with
/// its claim's secret as it is when each call is made (`secret`: a window that started
/// before the first claim learns the secret the claim answered).
public struct BuiltInPushClient: Sendable {
    public let endpoint: HubEndpoint
    public let device: String
    let secret: @Sendable () -> String?
    let hub: HubClient

    public init(endpoint: HubEndpoint, device: String, secret: @escaping @Sendable () -> String? = { nil }) {
        self.endpoint = endpoint
        self.device = device.lowercased()
        self.secret = secret
        self.hub = endpoint.listenClient(retry: .none)
    }

    /// The same device on the endpoint's current address (see `HubEndpoint.current`), which
    /// starts a hub only as `starting` says. An embedded hub that is not running is
    /// `hubStopped`; one that cannot be found or started, `unavailable`.
    public func current(starting: HubEndpoint.Start = .never) async throws(StreamFailure) -> BuiltInPushClient {
        guard endpoint.isEmbedded else { return self }
        do throws(HubEndpoint.LocateError) {
            return BuiltInPushClient(endpoint: try await endpoint.locate(starting: starting), device: device, secret: secret)
        } catch {
            switch error {
            case .notRunning: throw .hubStopped
            case .unavailable(let detail): throw .unavailable(detail)
            }
        }
    }

    /// Opens the device stream after `lastEventId`.
    public func stream(after lastEventId: Int64?, epoch: String?) async throws(StreamFailure) -> DeviceStream {
        do throws(HubError) {
            return try await hub.deviceStream(device: device, after: lastEventId, epoch: epoch, secret: secret())
        } catch {
            throw Self.failure(error, doing: "the stream")
        }
    }

    /// Every delivery after `since`, paging through the inbox, and the gap the hub told of.
    public func deliveries(after since: Int64, epoch: String?) async throws(StreamFailure) -> DeviceStream.Batch {
        do throws(HubError) {
            return try await hub.inboxPages(device: device, after: since, epoch: epoch, secret: secret())
        } catch {
            throw Self.failure(error, doing: "the inbox")
        }
    }

    /// A hub error, classified: 401 and 403 are refusals (a wrong key; a 401 says which
    /// connection string to fetch); a 404 of a device not registered (by the hub's code, by
    /// the text only where none came: `HubError.isDeviceNotRegistered`) waits for a
    /// registration, any other 404 means a hub without the push service (Azure delivers to
    /// real devices only); 429, and a 5xx that says when to come back, are waited for as long
    /// as asked; anything else is tried again.
    public static func failure(_ error: HubError, doing what: String) -> StreamFailure {
        switch error.status {
        case 404 where error.isDeviceNotRegistered: return .notRegistered
        case 404: return .noPushService
        // A refused signature is a key rotated (or wrong): said with where the current one is.
        case 401:
            let detail = error.readableDetail.trimmingCharacters(in: CharacterSet(charactersIn: ". "))
            return .refused("the hub refused \(what): \(detail). \(HubProblem.fetchListenString)")
        case 403: return .refused("the hub refused \(what): \(error.readableDetail)")
        case 429: return .throttled("the hub is busy (\(what), 429)", retryAfter: error.retryAfter)
        case let status? where status >= 500 && error.retryAfter != nil:
            return .throttled("the hub is busy (\(what), \(status))", retryAfter: error.retryAfter)
        default: return .unreachable("\(what) failed: \(error.readable)")
        }
    }
}
