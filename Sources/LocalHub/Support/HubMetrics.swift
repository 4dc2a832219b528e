import Synchronization

/// Counters behind `/metrics`, printed in the Prometheus text format.
public final class HubMetrics: Sendable {
    private struct Counters {
        var requests: [String: Int] = [:]
        var sends: [String: Int] = [:]
        var deliveries: [String: Int] = [:]
        var quarantined = 0
    }

    private let counters = Mutex(Counters())

    public init() {}

    func request(route: String, method: String, status: Int) {
        let key = "route=\"\(route)\",method=\"\(method)\",status=\"\(status)\""
        counters.withLock { $0.requests[key, default: 0] += 1 }
    }

    func setQuarantined(_ count: Int) {
        counters.withLock { $0.quarantined = count }
    }

    func send(format: String) {
        counters.withLock { $0.sends["format=\"\(format)\"", default: 0] += 1 }
    }

    func deliveries(_ outcomes: [String: Int]) {
        counters.withLock { counters in
            for (outcome, count) in outcomes { counters.deliveries["outcome=\"\(outcome)\"", default: 0] += count }
        }
    }

    /// The exposition text; gauges are read at call time.
    func render(installations: Int, registrations: Int, streamClients: Int) -> String {
        let snapshot = counters.withLock { $0 }
        var lines: [String] = []
        func family(_ name: String, _ type: String, _ help: String, _ values: [String: Int]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for (labels, value) in values.sorted(by: { $0.key < $1.key }) {
                lines.append(labels.isEmpty ? "\(name) \(value)" : "\(name){\(labels)} \(value)")
            }
        }
        family("hub_http_requests_total", "counter", "HTTP requests by route, method and status.", snapshot.requests)
        family("hub_sends_total", "counter", "Notifications accepted, by format.", snapshot.sends)
        family("hub_deliveries_total", "counter", "Notifications handed to devices or refused, by outcome.", snapshot.deliveries)
        family("hub_installations", "gauge", "Installations stored.", ["": installations])
        family("hub_registrations", "gauge", "Legacy registrations stored.", ["": registrations])
        family("hub_stream_clients", "gauge", "Open device streams on the sandbox push service.", ["": streamClients])
        family(
            "hub_quarantined_records", "gauge", "Stored rows that could not be loaded, kept aside in the quarantine table.",
            ["": snapshot.quarantined])
        return lines.joined(separator: "\n") + "\n"
    }
}
