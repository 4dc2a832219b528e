// swift-tools-version:6.1
import PackageDescription

// Both programs, as released, are linked with the Swift runtime and Foundation inside, and
// with packed relocations: they start without resolving thousands of symbols across shared
// libraries (the UI's launch through `breaking-news` fell from 30 to 23 ms), and only the
// pages a program touches become resident (about 7 MB less for the terminal than with the
// shared libraries). lld, since the static Foundation's libraries (listed below, which
// autolinking misses) need no particular order there. Debug builds keep the shared
// libraries: the test bundle links the `breaking-news` target, and XCTest and Testing come
// only as shared libraries.
let staticProgram: [LinkerSetting] = [
    .unsafeFlags(
        ["-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"],
        .when(platforms: [.linux], configuration: .release)),
    .linkedLibrary("_FoundationICU", .when(platforms: [.linux], configuration: .release)),
    .linkedLibrary("_FoundationCollections", .when(platforms: [.linux], configuration: .release)),
    .linkedLibrary("_FoundationCShims", .when(platforms: [.linux], configuration: .release)),
    .linkedLibrary("CoreFoundation", .when(platforms: [.linux], configuration: .release)),
]

let package = Package(
    name: "breaking-news",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "breaking-news", targets: ["breaking-news"]),
        .executable(name: "breaking-news-ui", targets: ["breaking-news-ui"]),
        .library(name: "NotificationHubs", targets: ["NotificationHubs"]),
        .library(name: "LocalHub", targets: ["LocalHub"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CNcursesw",
            pkgConfig: "ncursesw",
            providers: [.apt(["libncurses-dev"])]
        ),
        .target(
            name: "NotificationHubs",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "LocalHubSupport",
            dependencies: ["NotificationHubs"]
        ),
        .target(
            name: "LocalHub",
            dependencies: [
                "NotificationHubs", "LocalHubSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "BreakingNewsKit",
            dependencies: [
                "NotificationHubs", "LocalHubSupport",
            ]
        ),
        .target(
            name: "NewsTerminal",
            dependencies: ["BreakingNewsKit", "LocalHubSupport", "CNcursesw"]
        ),
        .target(
            name: "NewsCommandLine",
            dependencies: [
                "BreakingNewsKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "breaking-news",
            dependencies: [
                "NotificationHubs", "LocalHubSupport", "LocalHub", "BreakingNewsKit", "NewsTerminal", "NewsCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: staticProgram
        ),
        .executableTarget(
            name: "breaking-news-ui",
            dependencies: [
                "BreakingNewsKit", "NewsTerminal", "NewsCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            linkerSettings: staticProgram
        ),
        .executableTarget(
            name: "breaking-news-bench",
            dependencies: [
                "NotificationHubs", "LocalHubSupport", "LocalHub", "BreakingNewsKit", "NewsTerminal", "HubTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/BreakingNewsBench"
        ),
        .testTarget(
            name: "NotificationHubsTests",
            dependencies: [
                "NotificationHubs",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .target(
            name: "HubTestSupport",
            dependencies: [
                "LocalHub", "LocalHubSupport", "NotificationHubs", "TestTiers",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "Tests/HubTestSupport"
        ),
        // The tags and the condition of the test tiers (`make test`, `make test-fast`).
        .target(name: "TestTiers", path: "Tests/TestTiers"),
        .testTarget(
            name: "LocalHubTests",
            dependencies: [
                "LocalHub", "LocalHubSupport", "NotificationHubs", "HubTestSupport", "TestTiers",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "BreakingNewsKitTests",
            dependencies: [
                "BreakingNewsKit", "LocalHub", "LocalHubSupport", "NotificationHubs", "HubTestSupport", "TestTiers",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "NewsTerminalTests",
            dependencies: [
                "NewsTerminal", "BreakingNewsKit", "NotificationHubs",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "NewsCommandLineTests",
            dependencies: [
                "NewsCommandLine", "breaking-news",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "NotificationHubs", "LocalHub", "LocalHubSupport", "BreakingNewsKit", "HubTestSupport", "TestTiers",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
    ]
)

// `make fuzz` builds the libFuzzer entry point of the wire library's parsers, and of the
// hub's readers of its key file and stored rows, with the sanitizers; ordinary builds do not
// see it.
if Context.environment["BREAKING_NEWS_FUZZ"] != nil {
    package.products.append(.executable(name: "hub-fuzz", targets: ["hub-fuzz"]))
    package.targets.append(.target(name: "CFuzzer", path: "Fuzz/CFuzzer"))
    package.targets.append(
        .executableTarget(
            name: "hub-fuzz", dependencies: ["NotificationHubs", "LocalHubSupport", "LocalHub", "CFuzzer"], path: "Fuzz/HubFuzz",
            // gold cannot link the sanitizers' debug information; lld can.
            linkerSettings: [.unsafeFlags(["-use-ld=lld"])]))
}
