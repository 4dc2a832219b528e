import Foundation

/// Base64 with the URL alphabet and no padding (RFC 4648 §5), as JWTs (APNs and
/// FCM tokens, VAPID) and Web Push keys are written.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    public static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ $0 != UInt8(ascii: "=") && $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "/") }) else {
            return nil
        }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }
}
