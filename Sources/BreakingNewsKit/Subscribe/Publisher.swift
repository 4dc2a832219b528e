import Foundation
import NotificationHubs

/// Why a message was refused before anything was sent.
public struct PublishError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// The result of sending one category's breaking news.
public struct CategoryResult: Sendable {
    public let category: Category
    public let result: Result<SendReceipt, HubError>
}

/// Sends breaking news: one template notification per category, tag = the category,
/// `messageParam` = `Breaking <Category> News : <text>`.
public struct Publisher: Sendable {
    /// Longest message text, in UTF-8 bytes.
    public static let maximumTextBytes = 1024

    public let endpoint: HubEndpoint
    public let catalog: NewsCatalog

    public init(endpoint: HubEndpoint, catalog: NewsCatalog) {
        self.endpoint = endpoint
        self.catalog = catalog
    }

    /// The text as it will be sent, or why it cannot be.
    public static func validate(_ text: String) throws(PublishError) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw PublishError(description: "the message is empty") }
        guard trimmed.utf8.count <= maximumTextBytes else {
            throw PublishError(description: "the message is \(trimmed.utf8.count) bytes; at most \(maximumTextBytes) are allowed")
        }
        return trimmed
    }

    /// Sends `text` to each category at once; one result per category, in the given order.
    public func send(_ text: String, to categories: [Category], test: Bool = false) async throws(PublishError) -> [CategoryResult]
    {
        let message = try Self.validate(text)
        guard !categories.isEmpty else { throw PublishError(description: "no category is chosen") }
        let client: HubClient
        do throws(HubError) {
            client = try await endpoint.current().sendClient()
        } catch {
            return categories.map { CategoryResult(category: $0, result: .failure(error)) }
        }
        let results = await withTaskGroup(of: (Int, CategoryResult).self) { group in
            for (i, category) in categories.enumerated() {
                group.addTask {
                    let notification = HubNotification.template(["messageParam": NewsCatalog.message(message, category: category)]
                    )
                    do throws(HubError) {
                        let receipt =
                            test
                            ? try await client.testSend(notification, tagExpression: category.tag)
                            : try await client.send(notification, tagExpression: category.tag)
                        return (i, CategoryResult(category: category, result: .success(receipt)))
                    } catch {
                        return (i, CategoryResult(category: category, result: .failure(error)))
                    }
                }
            }
            var results: [(Int, CategoryResult)] = []
            for await result in group { results.append(result) }
            return results
        }
        return results.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// A raw template send to any tag expression (the tutorial's Postman step).
    public func sendTemplate(_ properties: [String: String], tags: String?, test: Bool = false) async throws -> SendReceipt {
        if let tags { _ = try TagExpression(parsing: tags) }
        let client = try await endpoint.current().sendClient()
        return test
            ? try await client.testSend(.template(properties), tagExpression: tags)
            : try await client.send(.template(properties), tagExpression: tags)
    }

    /// A native APNs send of a JSON payload.
    public func sendApple(_ payload: String, tags: String?, test: Bool = false) async throws -> SendReceipt {
        if let tags { _ = try TagExpression(parsing: tags) }
        let client = try await endpoint.current().sendClient()
        return test
            ? try await client.testSend(.apple(payload: payload), tagExpression: tags)
            : try await client.send(.apple(payload: payload), tagExpression: tags)
    }

    /// Waits (up to `timeout`) until the hub has dispatched these notifications, so a
    /// following read of the inbox sees them. Only meaningful on hubs that report details to
    /// the send key, which needs Manage for them (the embedded hub's Full key has it); with a
    /// key that lacks it, this returns at once.
    public func waitUntilDispatched(_ receipts: [SendReceipt], timeout: Duration = .seconds(3)) async {
        guard let client = try? await endpoint.current().sendClient(retry: .none) else { return }
        let deadline = ContinuousClock.now + timeout
        for receipt in receipts {
            guard let id = receipt.notificationId else { continue }
            while ContinuousClock.now < deadline {
                guard let details = try? await client.notificationDetails(id: id),
                    details.state == .enqueued || details.state == .processing
                else { break }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }
}
