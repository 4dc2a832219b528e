import Foundation
import LocalHubSupport
import Logging
import NewsCommandLine

extension HubCommand.Serve {
    /// Sends the hub's log, and its standard output and error, to the file at `path`,
    /// rotated by size (`RotatingLogFile`); makes the file's folder (0700) when it is missing.
    static func logToFile(_ path: String, maximumBytes: Int) throws {
        let url = URL(fileURLWithPath: path)
        let file: RotatingLogFile
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            file = try RotatingLogFile(url: url, maximumBytes: maximumBytes, carriesStandardStreams: true)
        } catch {
            throw CommandFailure("cannot write the log to \(path): \(error)", exitCode: .failure)
        }
        LoggingSystem.bootstrap { label in StreamLogHandler(label: label, stream: LogFileStream(file: file)) }
    }
}

/// The log's lines, one `write` each, into the rotating file.
struct LogFileStream: TextOutputStream, Sendable {
    let file: RotatingLogFile

    mutating func write(_ string: String) { file.write(string) }
}
