import ArgumentParser
import BreakingNewsKit
import Foundation
import LocalHubSupport
import NewsCommandLine
import NotificationHubs

extension HubCommand {
    /// `breaking-news hub devices [remove TOKEN]`: the terminal tokens the local hub's built-in
    /// push service holds, and letting one go, with the hub's Full key.
    struct Devices: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the devices of the local hub's built-in push service, or remove a claimed one.",
            subcommands: [List.self, Remove.self], defaultSubcommand: List.self)

        /// The local hub, with its Full key (Manage).
        static func fullClient(hub: String) async throws -> HubClient {
            let embedded = EmbeddedHub(paths: Paths(), hubName: hub)
            guard let state = await embedded.running() else {
                throw CommandFailure("the local hub is not running", exitCode: .hubUnreachable)
            }
            do {
                let strings = try embedded.connectionStrings(baseURL: state.url)
                return try HubClient(connectionString: ConnectionString(parsing: strings.full))
            } catch {
                throw CommandFailure("\(error)", exitCode: .failure)
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List claimed devices and devices with deliveries (device, deliveries, claimed).")

            @Option(help: "The hub.")
            var hub: String = LocalHubDefaults.hubName

            @Flag(help: "Print a JSON array of {\"device\", \"deliveries\", \"claimed\"}.")
            var json = false

            func run() async throws {
                let client = try await Devices.fullClient(hub: hub)
                let devices: [(device: String, deliveries: Int, claimed: Bool)]
                do {
                    devices = try await client.builtInPushDevices()
                } catch {
                    throw CommandFailure.hub(error, action: "Listing devices", doing: .reading, embedded: true)
                }
                if json {
                    say(
                        JSONValue.array(
                            devices.map {
                                .object([
                                    ("device", .string($0.device)), ("deliveries", .number(String($0.deliveries))),
                                    ("claimed", .bool($0.claimed)),
                                ])
                            }
                        ).text)
                    return
                }
                for device in devices {
                    say("\(device.device)  \(device.deliveries) deliveries\(device.claimed ? "  claimed" : "")")
                }
                say("\(devices.filter(\.claimed).count) claimed, \(devices.count) in all")
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Let the claim of a device token go (its terminal no longer receives until it subscribes again).")

            @Argument(help: "The device token (64 hexadecimal digits).")
            var token: String

            @Option(help: "The hub.")
            var hub: String = LocalHubDefaults.hubName

            func validate() throws {
                guard DeviceToken.isValid(token) else { throw ValidationError("'\(token.prefix(80))' is not a device token") }
            }

            func run() async throws {
                let client = try await Devices.fullClient(hub: hub)
                do {
                    if try await client.releaseBuiltInPushDevice(token) {
                        say("removed the claim of \(token.lowercased())")
                    } else {
                        throw CommandFailure("\(token.lowercased()) is not claimed", exitCode: .inputRejected)
                    }
                } catch let error as HubError {
                    throw CommandFailure.hub(error, action: "Removing the claim", doing: .reading, embedded: true)
                }
            }
        }
    }
}
