import Foundation

/// Everything a child wrote to `descriptor` (a pipe's end) until it closed it; closes it.
public func readAll(_ descriptor: Int32) -> String {
    defer { close(descriptor) }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(descriptor, &buffer, buffer.count)
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        data.append(contentsOf: buffer[..<count])
    }
    return String(decoding: data, as: UTF8.self)
}
