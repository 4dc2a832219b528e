/// APNs device tokens: hexadecimal, an even number of digits (Apple does not promise a length).
public enum DeviceToken {
    /// Whether `text` is a non-empty, even-length hexadecimal string of at most 400 digits.
    public static func isValid(_ text: String) -> Bool {
        let utf8 = text.utf8
        return !utf8.isEmpty && utf8.count % 2 == 0 && utf8.count <= 400
            && utf8.allSatisfy { PercentEncoding.hexValue($0) != nil }
    }
}
