import Foundation
import NotificationHubs

/// A stored row that could not be loaded, kept aside rather than keeping the hub from starting.
public struct QuarantinedRecord: Sendable, Hashable {
    /// `installation` or `registration`.
    public var kind: String
    /// The hub and id, with characters that cannot be shown escaped.
    public var hub: String
    public var id: String
    public var reason: String
}

extension QuarantinedRecord {
    /// The record of a row's hub and id as stored (bytes, which may not be UTF-8).
    init(kind: String, storedHub hub: some Sequence<UInt8>, storedId id: some Sequence<UInt8>, reason: String) {
        func readable(_ bytes: some Sequence<UInt8>) -> String {
            String(decoding: Array(bytes), as: UTF8.self).unicodeScalars.prefix(120).map {
                StoredText.forbidden(in: String($0)) == nil ? String($0) : "\\u{\(String($0.value, radix: 16))}"
            }.joined()
        }
        self.init(kind: kind, hub: readable(hub), id: readable(id), reason: reason)
    }
}

/// Why a stored row could not be loaded.
package struct QuarantineReason: Error, CustomStringConvertible {
    package let description: String
}
