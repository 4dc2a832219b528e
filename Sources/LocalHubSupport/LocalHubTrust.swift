import Foundation
import NotificationHubs

/// Decides whether the hub a state file names is running and is the one that wrote it,
/// before any client hands it a token: the process is alive, it holds the listening socket
/// of the recorded port, and `/healthz` answers a fresh challenge with the file's secret.
public enum LocalHubTrust {
    /// Why a state file is not trusted.
    public struct Distrust: Error, Sendable, CustomStringConvertible {
        public enum Kind: Sendable {
            /// No hub process: the file outlived its hub.
            case stale
            /// The process lives, but what answers is not it, or cannot prove it is.
            case impostor
            /// The process lives and holds the port, but did not answer (busy, starting).
            case silent
            /// The process lives and holds the port, but wrote its file before hubs proved
            /// themselves: a hub of an earlier version, to be stopped and started anew.
            case legacy
        }

        public let kind: Kind
        public let description: String
    }

    /// Whether the process a state file names holds its listening socket: enough to signal
    /// it (it is the process that wrote the file in our own folder), not to send it a token.
    public static func holdsPort(_ state: LocalHubState) -> Bool {
        guard LocalProcess.isAlive(state.pid), let port = state.port else { return false }
        return LocalProcess.listens(state.pid, port: port) == true
    }

    /// Whether the process a state file names holds the hub lock of `directory` and runs
    /// `program` (by name): enough to signal it, as `holdsPort` is, when it no longer listens
    /// (a hub whose shutdown hangs). No other process can hold that lock while a hub does,
    /// and a pid reused by anything else holds none.
    public static func holdsLock(_ state: LocalHubState, of directory: URL, program: String) -> Bool {
        guard LocalProcess.isAlive(state.pid), LocalProcess.programName(state.pid) == program else { return false }
        return LocalProcess.holdsExclusiveLock(
            state.pid, on: directory.appendingPathComponent(LocalHubDefaults.lockFileName).path)
    }

    /// The state, when every check passes.
    public static func verify(_ state: LocalHubState) async throws(Distrust) -> LocalHubState {
        guard LocalProcess.isAlive(state.pid) else {
            throw Distrust(kind: .stale, description: "the hub that wrote hub.json (pid \(state.pid)) is not running")
        }
        guard let port = state.port else {
            throw Distrust(kind: .impostor, description: "hub.json names no usable address ('\(state.url.prefix(80))')")
        }
        let holdsPort = LocalProcess.listens(state.pid, port: port)
        if holdsPort == false {
            throw Distrust(
                kind: .impostor, description: "pid \(state.pid) does not listen on port \(port), which hub.json names")
        }
        guard let secret = state.secret else {
            throw Distrust(
                kind: holdsPort == true ? .legacy : .impostor,
                description: "the hub at \(state.url) (pid \(state.pid)) is of an earlier version and cannot prove itself")
        }
        let challenge = LocalHubProof.makeChallenge()
        guard
            let answer = await HubClient.health(
                baseURL: state.url, query: "\(LocalHubProof.challengeParameter)=\(challenge)", header: LocalHubProof.header)
        else {
            throw Distrust(kind: .silent, description: "the hub at \(state.url) did not answer")
        }
        // The proof says whose hub it is; the status how it is. A hub whose database does not
        // answer says 503 with its proof: still this folder's hub, which must not be started again.
        guard [200, 503].contains(answer.status),
            ConstantTime.equal(answer.header ?? "", LocalHubProof.answer(challenge: challenge, secret: secret))
        else {
            throw Distrust(
                kind: .impostor,
                description: "what answers at \(state.url) cannot prove it is the hub of this data folder")
        }
        return state
    }
}
