import NotificationHubs

/// A send's explanation (`SendExplanation`) as lines of text: the findings first, in plain
/// words, then what the send was, what it matched, the near misses, each rendering and each
/// device's outcome. For `breaking-news explain` and the compose screen; printed through
/// `TerminalText` like everything from the network.
public enum Explanation {
    /// The hub's explanation of the send `id` as lines, or a line saying why there is none
    /// (`failed`).
    public static func fetch(_ id: String, from endpoint: HubEndpoint) async -> (lines: [String], failed: Bool) {
        do {
            return (lines(try await endpoint.current().sendClient().explain(id: id)), false)
        } catch {
            if error.status == 404 { return (["The hub has no explanation for \(id) (Azure hubs give none)."], true) }
            return (["Cannot explain: \(HubProblem.line(error, doing: .explaining, embedded: endpoint.isEmbedded))"], true)
        }
    }

    public static func lines(_ e: SendExplanation) -> [String] {
        var lines = e.findings
        lines.append("")
        lines.append("Send \(e.notificationId) to hub \(e.hub): \(e.format), \(e.state)")
        lines.append("  tags: \(e.tagExpression ?? "(everyone)")  enqueued: \(e.enqueued)")
        if let at = e.scheduledFor { lines.append("  scheduled for: \(at)") }
        for (platform, counts) in e.counts.sorted(by: { $0.key < $1.key }) {
            let text = counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            lines.append("  \(platform): \(text)")
        }
        if !e.matches.isEmpty || e.matchCount > 0 {
            lines.append("")
            lines.append(
                "Matches now (\(e.matchCount)\(e.matchCount > e.matches.count ? ", first \(e.matches.count) shown" : "")):")
            for target in e.matches {
                let template = target.template.map { " template \($0)" } ?? ""
                let expired = target.expired ? "  [channel expired]" : ""
                lines.append(
                    "  \(target.kind) \(target.id) (\(target.platform)\(template)) tags \(target.tags.joined(separator: ","))\(expired)"
                )
            }
        }
        if !e.nearMisses.isEmpty {
            lines.append("")
            lines.append("Near misses (hold some of the tags, not the expression):")
            for target in e.nearMisses {
                lines.append("  \(target.kind) \(target.id) (\(target.platform)) tags \(target.tags.joined(separator: ","))")
            }
        }
        if !e.renderings.isEmpty {
            lines.append("")
            lines.append("Rendered payloads:")
            for rendering in e.renderings {
                let verdict = rendering.refusal.map { "refused: \($0)" } ?? "passes the check"
                lines.append("  \(rendering.template) (\(rendering.platform)), \(rendering.payload.utf8.count) bytes, \(verdict)")
                lines.append("    \(rendering.payload.prefix(300))")
            }
        }
        if !e.lines.isEmpty {
            lines.append("")
            lines.append(
                "Devices (as dispatched\(e.lines.count >= SendExplanation.lineLimit ? ", first \(e.lines.count)" : "")):")
            for line in e.lines {
                lines.append("  \(line.platform) \(line.handle.prefix(24))…  \(line.outcome): \(line.text)")
            }
        }
        // What the hub sent is shown, not trusted: no line longer than a screen can use.
        return lines.map { $0.count > maximumLine ? String($0.prefix(maximumLine)) + "…" : $0 }
    }

    /// The longest line shown.
    public static let maximumLine = 500
}
