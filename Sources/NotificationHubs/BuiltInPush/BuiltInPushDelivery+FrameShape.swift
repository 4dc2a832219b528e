import NIOCore

extension BuiltInPushDelivery {
    /// The one writer of a delivery's Server-Sent Events frame, in two parts: what the
    /// deliveries of one notification through one template share (everything but the number
    /// and the device), encoded once, and the frame of each delivery written from it. A hub
    /// fanning one send out to many devices so never builds a JSON tree, escapes the shared
    /// strings or formats the date per device.
    public struct FrameShape: Sendable {
        /// `,"notificationId":…,"hub":…,"device":`
        private let head: [UInt8]
        /// `,"template":…,"tags":…,"deliveredAt":…,"payload":…,"epoch":…}` and the blank line.
        private let tail: [UInt8]

        /// `payloadJSON` must be compact JSON: a frame's data is one line.
        public init(
            notificationId: String, hub: String, template: String?, tags: String?, deliveredAt: String, payloadJSON: String,
            epoch: String?
        ) {
            var head = Array(",\"notificationId\":".utf8)
            JSONValue.writeString(notificationId, to: &head)
            head += ",\"hub\":".utf8
            JSONValue.writeString(hub, to: &head)
            head += ",\"device\":".utf8
            var tail: [UInt8] = []
            if let template {
                tail += ",\"template\":".utf8
                JSONValue.writeString(template, to: &tail)
            }
            if let tags {
                tail += ",\"tags\":".utf8
                JSONValue.writeString(tags, to: &tail)
            }
            tail += ",\"deliveredAt\":".utf8
            JSONValue.writeString(deliveredAt, to: &tail)
            tail += ",\"payload\":".utf8
            tail += payloadJSON.utf8
            if let epoch {
                tail += ",\"epoch\":".utf8
                JSONValue.writeString(epoch, to: &tail)
            }
            tail += "}\n\n".utf8
            self.head = head
            self.tail = tail
        }

        /// Appends the frame of the delivery numbered `seq` to `device`.
        public func write(seq: Int64, device: String, to buffer: inout ByteBuffer) {
            buffer.writeStaticString("id: ")
            Self.writeDecimal(seq, to: &buffer)
            buffer.writeStaticString("\nevent: notification\ndata: {\"seq\":")
            Self.writeDecimal(seq, to: &buffer)
            buffer.writeBytes(head)
            if device.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }) {
                // A device token as the hub stores them: printable ASCII, nothing to escape.
                buffer.writeInteger(UInt8(ascii: "\""))
                buffer.writeString(device)
                buffer.writeInteger(UInt8(ascii: "\""))
            } else {
                var quoted: [UInt8] = []
                JSONValue.writeString(device, to: &quoted)
                buffer.writeBytes(quoted)
            }
            buffer.writeBytes(tail)
        }

        /// The frame of the delivery numbered `seq` to `device`.
        public func frame(seq: Int64, device: String) -> String {
            var buffer = ByteBuffer()
            write(seq: seq, device: device, to: &buffer)
            return buffer.readString(length: buffer.readableBytes) ?? ""
        }

        /// Bytes a frame to `device` takes, for sizing a buffer.
        public func size(device: String) -> Int { 64 + head.count + device.utf8.count + tail.count }

        private static func writeDecimal(_ value: Int64, to buffer: inout ByteBuffer) {
            if value < 0 {
                buffer.writeString(String(value))
                return
            }
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for 24 digits
            var count = 0
            var v = UInt64(value)
            withUnsafeMutableBytes(of: &digits) { raw in
                repeat {
                    raw[23 - count] = UInt8(ascii: "0") + UInt8(v % 10)
                    v /= 10
                    count += 1
                } while v > 0
                buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[(24 - count)...]))
            }
        }
    }
}
