import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL

extension HubClient {
    /// What `GET /healthz` answered: the status and the named header.
    package struct HealthAnswer: Sendable, Hashable {
        package var status: Int
        package var header: String?
    }

    /// Asks `GET {baseURL}/healthz?{query}` without any credential and returns its status and
    /// the header `header`; nil when nothing answered within `timeout`. A local hub serving
    /// its own self-signed certificate is asked over TLS without checking the certificate:
    /// what it answers is checked by the caller instead.
    package static func health(
        baseURL: String, query: String, header: String, timeout: TimeAmount = .seconds(2)
    ) async -> HealthAnswer? {
        var request = HTTPClientRequest(url: baseURL + "/healthz" + (query.isEmpty ? "" : "?" + query))
        request.method = .GET
        let client = baseURL.hasPrefix("https:") ? selfSignedHealthClient : sharedHTTPClient
        do {
            let response = try await client.execute(request, timeout: timeout)
            _ = try await response.body.collect(upTo: 4096)
            return HealthAnswer(status: Int(response.status.code), header: response.headers.first(name: header))
        } catch {
            return nil
        }
    }

    static let selfSignedHealthClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        configuration.tlsConfiguration = tls
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()
}
