/// Why a local hub could not start.
public struct LocalHubStartError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
