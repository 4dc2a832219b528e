import Foundation
import NotificationHubs

/// "Why didn't it arrive?": a send explained from what the hub recorded when it dispatched
/// it (its outcome counts and its first devices' outcomes) and from its tables now (what the
/// expression matches, the near misses, each template's rendering and the payload check).
struct SendExplainer {
    let services: [PushServiceKind: any PushService]

    /// Near misses listed at most.
    static let nearMissLimit = 20
    /// Distinct renderings shown at most.
    static let renderingLimit = 10

    /// The explanation of the notification `n`, with its hub's `tables` as they are now.
    func explain(_ n: StoredNotification, tables: HubTables?) -> SendExplanation {
        var matches: [SendExplanation.Target] = []
        var matchCount = 0
        var nearMisses: [SendExplanation.Target] = []
        var renderings: [SendExplanation.Rendering] = []
        let direct = n.batchHandles ?? n.directHandle.map { [$0] }
        if let tables, direct == nil {
            let expression = n.tagExpression.flatMap { try? TagExpression(parsing: $0) }
            let isTemplate = n.format == .template
            var slots = tables.index.resolve(expression, templates: isTemplate).map { tables.index.target($0) }
            if !isTemplate { slots.removeAll { $0.platform != n.format.platform } }
            matchCount = slots.count
            slots.sort { ($0.owner, $0.templateName ?? "") < ($1.owner, $1.templateName ?? "") }
            for target in slots.prefix(SendExplanation.lineLimit) { matches.append(describe(target, in: tables)) }
            let properties = isTemplate ? (try? JSONValue(parsing: n.body)).flatMap { try? TemplateProperties(json: $0) } : nil
            var rendered: Set<String> = []
            for target in slots where renderings.count < Self.renderingLimit {
                let name = target.templateName ?? "(native)"
                guard rendered.insert("\(target.platform.rawValue) \(target.templateNumber)").inserted else { continue }
                let payload =
                    target.template.map { Array($0.render(properties ?? TemplateProperties([:]))) } ?? Array(n.body.utf8)
                renderings.append(
                    SendExplanation.Rendering(
                        template: name, platform: target.platform.rawValue, payload: String(decoding: payload, as: UTF8.self),
                        refusal: check(payload, platform: target.platform, device: target.device, tables: tables)))
            }
            if let expression {
                let wanted = Set(expression.tags)
                let matched = Set(slots.map(\.owner))
                for installation in tables.installations.values.sorted(by: { $0.installationId < $1.installationId }) {
                    guard nearMisses.count < Self.nearMissLimit else { break }
                    let tags = installation.effectiveTags + (installation.templates ?? [:]).flatMap { $1.tags ?? [$0] }
                    let owner = TagIndex.ownerKey(installation: installation.installationId)
                    guard !matched.contains(owner), !wanted.isDisjoint(with: tags) else { continue }
                    nearMisses.append(
                        SendExplanation.Target(
                            kind: "installation", id: installation.installationId, platform: installation.platform.rawValue,
                            handle: installation.pushChannel?.handle ?? "", template: nil, tags: tags,
                            expired: installation.pushChannelExpired == true))
                }
            }
        }
        var counts: [String: [String: Int]] = [:]
        for (platform, names) in OutcomeKey.byPlatform(n.outcomeCounts) { counts[platform.rawValue] = names }
        var explanation = SendExplanation(
            notificationId: n.id, hub: n.hub, format: n.format.rawValue, tagExpression: n.tagExpression, state: n.state.rawValue,
            enqueued: W3CDate.format(n.enqueued), scheduledFor: n.scheduledFor.map(W3CDate.format), counts: counts,
            matches: matches, matchCount: matchCount, nearMisses: nearMisses, renderings: renderings, lines: n.report,
            findings: [])
        explanation.findings = Self.findings(explanation, notification: n, direct: direct)
        return explanation
    }

    private func describe(_ target: DeliveryTarget, in tables: HubTables) -> SendExplanation.Target {
        let id = String(target.owner.dropFirst(2))
        let isInstallation = target.owner.hasPrefix("i:")
        let tags: [String]
        if isInstallation, let installation = tables.installations[id] {
            let templateTags = target.templateName.flatMap { installation.templates?[$0] }.map {
                $0.tags ?? [target.templateName!]
            }
            tags = installation.effectiveTags + (templateTags ?? [])
        } else {
            tags = tables.registrations[id]?.registration.tags ?? []
        }
        return SendExplanation.Target(
            kind: isInstallation ? "installation" : "registration", id: id, platform: target.platform.rawValue,
            handle: target.device, template: target.templateName, tags: tags, expired: target.expired)
    }

    /// The payload check of the service that would carry `payload` to `device`, in words.
    private func check(_ payload: [UInt8], platform: Platform, device: String, tables: HubTables) -> String? {
        let route = DispatchPlanner.route(platform, hub: tables.name, services: services)
        guard let kind = route.service(for: device, claimedDevices: tables.claimedDevices), let service = services[kind]
        else {
            return "no push service of this hub carries \(platform) messages"
        }
        guard case .refused(let name, let text)? = service.check(payload) else { return nil }
        let named = text.contains(name.rawValue) ? text : "\(text) [\(name.rawValue)]"
        return "\(named); the rendered payload is \(payload.count) bytes"
    }

    /// What the explanation shows, in sentences: what happened to the send, and why.
    static func findings(_ e: SendExplanation, notification n: StoredNotification, direct: [String]?) -> [String] {
        switch n.state {
        case .scheduled:
            return ["It is scheduled for \(e.scheduledFor ?? "later"); nothing has been sent yet."]
        case .cancelled:
            return ["It was cancelled before its time; nothing was sent."]
        case .enqueued, .processing:
            return ["It is accepted and being dispatched; ask again in a moment."]
        case .abandoned:
            let reason = n.report.first { $0.outcome == NotificationDetails.State.abandoned.rawValue }?.text
            return ["It was abandoned\(reason.map { ": \($0)" } ?? ""). Nothing more is sent of it."]
        default:
            break
        }
        let all = e.counts.values.reduce(into: [String: Int]()) { total, names in
            for (name, count) in names { total[name, default: 0] += count }
        }
        guard !all.isEmpty else { return [nothingReached(e, notification: n, direct: direct)] }
        return all.sorted(by: { $0.key < $1.key }).map { name, count in finding(name, count: count, in: e) }
    }

    /// The one sentence of a send that reached no device.
    private static func nothingReached(_ e: SendExplanation, notification n: StoredNotification, direct: [String]?) -> String {
        let what = n.tagExpression.map { "tags that satisfy '\($0)'" } ?? "the send's format"
        var sentence =
            direct != nil
            ? "It was sent to no device." : "Nothing matched: no installation or registration of hub '\(n.hub)' holds \(what)."
        if !e.nearMisses.isEmpty {
            sentence += " \(e.nearMisses.count) installation(s) hold some of its tags but not that combination; see near misses."
        }
        if n.format != .template, direct == nil {
            sentence +=
                " (A \(n.format.rawValue) send reaches only \(n.format.platform?.rawValue ?? "its platform's") devices; template sends reach templates.)"
        }
        return sentence
    }

    /// What `count` devices with the outcome `name` came to, in a sentence.
    private static func finding(_ name: String, count: Int, in e: SendExplanation) -> String {
        let devices = count == 1 ? "1 device" : "\(count) devices"
        let reason = e.lines.first(where: { $0.outcome == name }).map { " (\($0.text))" } ?? ""
        switch OutcomeName(rawValue: name) {
        case .success?:
            return "\(devices) got it: its push service accepted it."
        case .expiredChannel?:
            return
                "\(devices) did not get it: the push channel expired — the push service said the app is gone\(reason); it gets nothing until it registers again."
        case .badChannel?:
            return
                "\(devices) did not get it: the push service does not know the handle\(reason); it gets nothing until it registers a good one."
        case .invalidNotificationSize?, .invalidPayload?:
            let refusal = e.renderings.first { $0.refusal != nil }?.refusal.map { ": \($0)" } ?? reason
            return "\(devices) did not get it: the payload failed the check\(refusal)."
        case .skipped?:
            let expired = e.lines.filter { $0.outcome == name && $0.text.hasPrefix(DispatchPlanner.expiredPrefix) }
            if let first = expired.first, expired.count == e.lines.filter({ $0.outcome == name }).count {
                return
                    "\(devices) got nothing: their installation or registration had expired (\(first.text)); retention removes it."
            }
            return
                "\(devices) were skipped: \(expired.isEmpty ? "" : "some had expired, the others because ")this hub has no push service for their platform (give it credentials in providers.json)."
        case .dropped?:
            return
                "\(devices) did not get it: what the send rendered for one installation or registration passed \(DispatchPlanner.renderedBytesPerOwner / 1024) KB, and the rest of its templates were dropped."
        default:
            return "\(devices) did not get it: \(name)\(reason)."
        }
    }
}
