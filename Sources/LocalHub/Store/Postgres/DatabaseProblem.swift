import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// Why a PostgreSQL database cannot be used, told from what meeting it met, in one line that
/// names the cause and the fix. What a start, an admin command and a running node's log and
/// `/healthz` say when the database will not do.
public struct DatabaseProblem: Error, CustomStringConvertible, Sendable, Equatable {
    /// Which of the three an operator fixes differently (and a command's exit code tells).
    public enum Kind: Sendable, Equatable {
        /// Nothing answers: refused, timed out, a name that does not resolve, a server
        /// starting or out of connections. Often passes by itself.
        case unreachable
        /// The server answered and would not let this role in: a wrong password, no
        /// `pg_hba.conf` line, a password asked for and none given.
        case authentication
        /// In, or nearly, but not usable: no such database, TLS asked for and not offered
        /// (or the other way round), no right to create tables.
        case unusable
    }

    public let kind: Kind
    public let description: String

    init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// Where the meeting was: the server, the role and the database, as the URL named them.
    struct Place: Sendable {
        let host: String
        let port: Int
        let user: String
        let database: String

        var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// `error`, met connecting to (or starting a session with) the server at `place`, as a
    /// problem an operator can fix; nil for an error that says nothing of the database itself
    /// (a cancellation).
    static func classify(_ error: any Error, at place: Place) -> DatabaseProblem? {
        if error is CancellationError { return nil }
        guard let error = error as? PSQLError else { return connecting(error, at: place) }
        switch error.code {
        case .connectionError:
            return connecting(error.underlying, at: place)
        case .authMechanismRequiresPassword:
            return DatabaseProblem(
                .authentication,
                "the database at \(place.address) asks role '\(place.user)' for a password and none was given: put it in a "
                    + "file only you can read and pass --store-password-file FILE (or set BREAKING_NEWS_HUB_STORE_PASSWORD)")
        case .sslUnsupported:
            return DatabaseProblem(
                .unusable,
                "the database at \(place.address) does not offer TLS, which the URL's sslmode asks for: turn ssl on in "
                    + "postgresql.conf (with a certificate), or take sslmode out of the URL on a trusted network")
        case .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
            return DatabaseProblem(.unusable, "TLS with the database at \(place.address) failed (\(error.code))")
        case .server:
            return server(error, at: place)
        case .serverClosedConnection, .uncleanShutdown:
            return DatabaseProblem(
                .unreachable, "the database at \(place.address) closed the connection before it was ready (\(error.code))")
        case .unsupportedAuthMechanism, .saslError:
            return DatabaseProblem(
                .authentication,
                "the database at \(place.address) asks role '\(place.user)' to log in in a way this hub does not speak "
                    + "(\(error.code)): use scram-sha-256 or md5 for it in pg_hba.conf")
        default:
            return nil
        }
    }

    /// What the server itself said no with.
    private static func server(_ error: PSQLError, at place: Place) -> DatabaseProblem {
        let state = error.serverInfo?[.sqlState] ?? ""
        let said = Self.line(error.serverInfo?[.message] ?? "SQLSTATE \(state)")
        switch state {
        case "28P01":
            return DatabaseProblem(
                .authentication,
                "the database at \(place.address) refused the password of role '\(place.user)' (28P01): check the password "
                    + "file, or set the role's password again (ALTER ROLE \(place.user) PASSWORD …)")
        case "28000" where said.contains("no encryption"):
            return DatabaseProblem(
                .unusable,
                "the database at \(place.address) takes role '\(place.user)' only over TLS (28000: \(said)): add "
                    + "?sslmode=require (or verify-full with sslrootcert) to the URL")
        case "28000":
            return DatabaseProblem(
                .authentication,
                "the database at \(place.address) does not let role '\(place.user)' in (28000: \(said)): add a line for this "
                    + "machine, the role and database '\(place.database)' to pg_hba.conf and reload PostgreSQL")
        case "3D000":
            return DatabaseProblem(
                .unusable,
                "the database '\(place.database)' does not exist at \(place.address) (3D000): create it, owned by the role "
                    + "(runuser -u postgres -- createdb -O \(place.user) \(place.database))")
        case "42501":
            return DatabaseProblem(
                .unusable,
                "role '\(place.user)' may not create the hub's tables in database '\(place.database)' (42501: \(said)): make "
                    + "the role the database's owner (ALTER DATABASE \(place.database) OWNER TO \(place.user))")
        case "53300":
            return DatabaseProblem(
                .unreachable,
                "the database at \(place.address) has no connection left (53300): raise max_connections, or run fewer nodes "
                    + "(each takes 17)")
        case "57P03":
            return DatabaseProblem(.unreachable, "the database at \(place.address) is starting or stopping (57P03): \(said)")
        default:
            return DatabaseProblem(
                state.hasPrefix("08") || state.hasPrefix("57P") ? .unreachable : .unusable,
                "the database at \(place.address) refused the session (\(state.isEmpty ? "no SQLSTATE" : state): \(said))")
        }
    }

    /// What a connection that was never made met: the name, the port, the way there, TLS.
    private static func connecting(_ underlying: (any Error)?, at place: Place) -> DatabaseProblem {
        let reason: String
        switch underlying {
        case let error as NIOConnectionError:
            if error.connectionErrors.isEmpty, let dns = error.dnsAError ?? error.dnsAAAAError {
                return DatabaseProblem(
                    .unreachable, "the database's host name '\(place.host)' does not resolve (\(Self.line("\(dns)")))")
            }
            if let first = error.connectionErrors.first { return connecting(first.error, at: place) }
            reason = Self.line("\(error)")
        case let error as IOError where error.errnoCode == ECONNREFUSED:
            return DatabaseProblem(
                .unreachable,
                "nothing listens at \(place.address) (connection refused): is PostgreSQL running, and on that address and "
                    + "port (listen_addresses, port in postgresql.conf)?")
        case let error as IOError where [EHOSTUNREACH, ENETUNREACH].contains(error.errnoCode):
            return DatabaseProblem(.unreachable, "no route to \(place.address) (\(Self.line("\(error)")))")
        case let error as ChannelError:
            if case .connectTimeout(let after) = error {
                return DatabaseProblem(
                    .unreachable,
                    "no answer from \(place.address) within \(after.nanoseconds / 1_000_000_000) s: a firewall, a wrong "
                        + "address, or a server that is down")
            }
            reason = Self.line("\(error)")
        case let error as NIOSSLError:
            return DatabaseProblem(
                .unusable,
                "TLS with the database at \(place.address) failed (\(Self.line("\(error)"))): check sslrootcert and that "
                    + "the certificate names '\(place.host)'")
        case let error as BoringSSLError:
            return DatabaseProblem(
                .unusable,
                "TLS with the database at \(place.address) failed (\(Self.line("\(error)"))): check sslrootcert and that "
                    + "the certificate names '\(place.host)'")
        case let error?:
            reason = Self.line("\(error)")
        case nil:
            reason = "no reason given"
        }
        return DatabaseProblem(.unreachable, "cannot connect to the database at \(place.address) (\(reason))")
    }

    /// `text` on one line, cut to what a log line holds: a server's words are the server's,
    /// so control and format characters (a terminal's escapes, bidirectional overrides) and
    /// line breaks become spaces.
    static func line(_ text: String) -> String {
        let plain = text.unicodeScalars.prefix(300).map { scalar -> Unicode.Scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator: " "
            default: scalar
            }
        }
        return String(String.UnicodeScalarView(plain))
    }
}
