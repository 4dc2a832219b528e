import CoreMetrics
import Prometheus
import Synchronization

/// What `/metrics` shows: counters and gauges through swift-metrics, in one Prometheus
/// registry per hub process (several hubs in one test process keep theirs apart), written
/// in the Prometheus text format by swift-prometheus.
///
/// - `hub_http_requests_total{route,method,status}`: requests, by route as the route table
///   names it (`/{hub}/installations/{id}`).
/// - `hub_sends_total{format}`: notifications accepted.
/// - `hub_deliveries_total{outcome}`: messages handed to devices (`Success`) or refused.
/// - `hub_installations`, `hub_registrations`, `hub_stream_clients`,
///   `hub_quarantined_records`: gauges, read when `/metrics` is asked.
///
/// A node of several on a shared store labels every series with `node`, so that a scraper
/// behind the front tells the nodes apart.
public final class HubMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    /// Counters by name and labels, so a request finds its counter without the registry's
    /// lock and lookup.
    private let counters = Mutex<[String: CoreMetrics.Counter]>([:])
    /// Request counters by their labels: the hot path, with no key string built per request.
    private struct RequestKey: Hashable {
        let route: String
        let method: String
        let status: Int
    }
    private let requests = Mutex<[RequestKey: CoreMetrics.Counter]>([:])
    private let installations: CoreMetrics.Gauge
    private let registrations: CoreMetrics.Gauge
    private let streamClients: CoreMetrics.Gauge
    private let quarantined: CoreMetrics.Gauge

    /// `node` with the node's name, or nothing for a hub of its own.
    private let nodeLabel: [(String, String)]

    public init(node: String? = nil) {
        factory = PrometheusMetricsFactory(registry: registry)
        let nodeLabel = node.map { [("node", $0)] } ?? []
        self.nodeLabel = nodeLabel
        installations = Gauge(label: "hub_installations", dimensions: nodeLabel, factory: factory)
        registrations = Gauge(label: "hub_registrations", dimensions: nodeLabel, factory: factory)
        streamClients = Gauge(label: "hub_stream_clients", dimensions: nodeLabel, factory: factory)
        quarantined = Gauge(label: "hub_quarantined_records", dimensions: nodeLabel, factory: factory)
    }

    private func counter(_ name: String, _ dimensions: [(String, String)]) -> CoreMetrics.Counter {
        let key = name + dimensions.map { "\u{0}" + $0.1 }.joined()
        return counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(label: name, dimensions: dimensions + nodeLabel, factory: factory)
            counters[key] = counter
            return counter
        }
    }

    func request(route: String, method: String, status: Int) {
        let key = RequestKey(route: route, method: method, status: status)
        let counter = requests.withLock { requests in
            if let counter = requests[key] { return counter }
            let counter = Counter(
                label: "hub_http_requests_total",
                dimensions: [("route", route), ("method", method), ("status", String(status))] + nodeLabel,
                factory: factory)
            requests[key] = counter
            return counter
        }
        counter.increment()
    }

    func setQuarantined(_ count: Int) {
        quarantinedCount.withLock { $0 = count }
        quarantined.record(count)
    }

    /// Rows quarantined since, while the hub runs (a node reading a bad row another wrote).
    func addQuarantined(_ count: Int) {
        let total = quarantinedCount.withLock { total in
            total += count
            return total
        }
        quarantined.record(total)
    }

    private let quarantinedCount = Mutex(0)

    func send(format: String) {
        counter("hub_sends_total", [("format", format)]).increment()
    }

    func deliveries(_ outcomes: [String: Int]) {
        for (outcome, count) in outcomes {
            counter("hub_deliveries_total", [("outcome", outcome)]).increment(by: count)
        }
    }

    /// The exposition text, with the gauges read now.
    func render(installations: Int, registrations: Int, streamClients: Int) -> String {
        self.installations.record(installations)
        self.registrations.record(registrations)
        self.streamClients.record(streamClients)
        return registry.emitToString()
    }
}
