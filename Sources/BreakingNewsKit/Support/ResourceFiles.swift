import Foundation

/// The files of the top-level `Resources/` folder, found wherever the binary runs from: a
/// build folder, an install prefix (`<prefix>/share/breaking-news`) or a test runner.
public struct ResourceFiles: Sendable {
    /// The folder the resources were found in.
    public let directory: URL

    /// Finds the resources: `$BREAKING_NEWS_RESOURCES`, then `../share/breaking-news` beside
    /// the executable, then a `Resources/` folder above the executable or this source file.
    public static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ResourceFiles {
        for candidate in candidates(environment: environment) where isResourceFolder(candidate) {
            return ResourceFiles(directory: candidate)
        }
        throw ResourceError(
            description:
                "the Resources folder (categories.json) was not found beside the executable or in $BREAKING_NEWS_RESOURCES; reinstall with 'make install'"
        )
    }

    /// The resources of this process, located once.
    public static let shared: Result<ResourceFiles, Error> = Result { try locate() }

    static func candidates(environment: [String: String]) -> [URL] {
        var result: [URL] = []
        if let override = environment["BREAKING_NEWS_RESOURCES"], !override.isEmpty {
            result.append(URL(fileURLWithPath: override))
        }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let binDirectory = executable.deletingLastPathComponent()
        result.append(binDirectory.deletingLastPathComponent().appendingPathComponent("share/breaking-news"))
        var directory = binDirectory
        for _ in 0..<6 {
            result.append(directory.appendingPathComponent("Resources"))
            directory = directory.deletingLastPathComponent()
        }
        let sourceRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        result.append(sourceRoot.appendingPathComponent("Resources"))
        return result
    }

    static func isResourceFolder(_ url: URL) -> Bool {
        FileManager.default.fileExists(atPath: url.appendingPathComponent("categories.json").path)
    }

    /// The bytes of one resource file.
    public func data(_ name: String) throws -> Data {
        let url = directory.appendingPathComponent(name)
        do {
            return try Data(contentsOf: url)
        } catch {
            throw ResourceError(description: "the resource \(url.path) cannot be read: \(error.localizedDescription)")
        }
    }

    /// The text of one resource file.
    public func text(_ name: String) throws -> String {
        String(decoding: try data(name), as: UTF8.self)
    }
}

/// A resource file that is missing or unreadable.
public struct ResourceError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
