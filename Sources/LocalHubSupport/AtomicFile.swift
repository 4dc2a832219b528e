import Foundation

/// Writes a file by writing a temporary file beside it and renaming it over the target.
public enum AtomicFile {
    public static func write(_ data: Data, to url: URL, permissions: Int = 0o644) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(
            ".\(url.lastPathComponent).\(ProcessInfo.processInfo.processIdentifier).tmp")
        _ = FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: permissions])
        let handle = try FileHandle(forWritingTo: temporary)
        do {
            try handle.write(contentsOf: data)
            try handle.synchronize()
            try handle.close()
        } catch {
            try? handle.close()
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        guard rename(temporary.path, url.path) == 0 else {
            let message = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw AtomicFileError(description: "cannot replace \(url.path): \(message)")
        }
    }
}

/// A file that could not be replaced.
public struct AtomicFileError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
