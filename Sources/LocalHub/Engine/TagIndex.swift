import NotificationHubs

/// Something a send can reach: an installation's template, an installation itself (native
/// sends), or a legacy registration.
public final class DeliveryTarget: Sendable {
    public let owner: String
    /// The hub, for installations' projected registration ids.
    let hub: String
    /// The registration id reported in test-send outcomes (projected for installations,
    /// computed only when asked for).
    public var registrationId: String {
        guard owner.hasPrefix("i:") else { return String(owner.dropFirst(2)) }
        return TagIndex.projectedRegistrationId(hub: hub, owner: String(owner.dropFirst(2)), template: templateName ?? "")
    }
    /// The device handle: lower-cased for APNs, as given otherwise (`Delivery.device`).
    public let device: String
    public let platform: Platform
    /// The installation's `pushChannelExpired`: its push service said the channel is gone.
    public let expired: Bool
    /// When its installation or registration expires (seconds since 1970; infinity: never).
    public let expires: Double
    /// A browser installation's Web Push keys.
    public let webPushKeys: WebPushKeys?
    /// The template's name for template targets.
    public let templateName: String?
    /// The compiled template for template targets on JSON platforms.
    public let template: Template?
    /// A small number shared by every target with the same template body.
    public let templateNumber: Int32
    /// Whether its installation has templates enough that one send's renderings for it could
    /// pass `DispatchPlanner.renderedBytesPerOwner` (the planner counts only these).
    let manyTemplates: Bool

    init(
        owner: String, hub: String, device: String, platform: Platform, templateName: String?, template: Template?,
        templateNumber: Int32, expired: Bool = false, expires: Double = .infinity, webPushKeys: WebPushKeys? = nil,
        manyTemplates: Bool = false
    ) {
        self.manyTemplates = manyTemplates
        self.expired = expired
        self.expires = expires
        self.webPushKeys = webPushKeys
        self.owner = owner
        self.hub = hub
        self.device = device
        self.platform = platform
        self.templateName = templateName
        self.template = template
        self.templateNumber = templateNumber
    }
}

/// The tag index of one hub: which targets carry which tag. Template sends reach only
/// template targets and native sends only native ones.
public struct TagIndex: Sendable {
    private(set) var targets: [DeliveryTarget?] = []
    private var freeSlots: [Int32] = []
    private var templatePostings: [String: Set<Int32>] = [:]
    private var nativePostings: [String: Set<Int32>] = [:]
    private var allTemplate: Set<Int32> = []
    private var allNative: Set<Int32> = []
    private var slotsByOwner: [String: [Int32]] = [:]
    private var tagsBySlot: [Int32: [String]] = [:]
    /// Template bodies in use, numbered; a number is freed with the last target using it.
    private var templateNumbers: [String: NumberedTemplate] = [:]
    private var templateKeys: [Int32: String] = [:]
    private var freeTemplateNumbers: Set<Int32> = []
    private var templateNumberEnd: Int32 = 0

    private struct NumberedTemplate {
        let template: Template?
        let number: Int32
        var users: Int
    }

    public init() {}

    /// How many distinct template bodies are in use.
    public var templateCount: Int { templateNumbers.count }
    /// Template numbers are below this: the size of a per-send cache indexed by them.
    public var templateNumberLimit: Int { Int(templateNumberEnd) }
    /// How many targets the index holds.
    public var targetCount: Int { allTemplate.count + allNative.count }

    public func target(_ slot: Int32) -> DeliveryTarget { targets[Int(slot)]! }

    static func ownerKey(installation id: String) -> String { "i:" + id }
    static func ownerKey(registration id: String) -> String { "r:" + id }

    /// Indexes an installation, replacing what it had; `nil` removes it.
    public mutating func setInstallation(_ installation: Installation?, id: String, hub: String) {
        let owner = Self.ownerKey(installation: id)
        removeOwner(owner)
        guard let installation, let channel = installation.pushChannel else { return }
        let device = Self.device(channel.handle, platform: installation.platform)
        let expired = installation.pushChannelExpired == true
        let expires = Self.expiry(installation.expirationTime)
        var keys: WebPushKeys?
        if case .browser(_, let p256dh, let auth) = channel { keys = WebPushKeys(p256dh: p256dh, auth: auth) }
        let baseTags = installation.effectiveTags
        let native = DeliveryTarget(
            owner: owner, hub: hub, device: device, platform: installation.platform, templateName: nil, template: nil,
            templateNumber: -1, expired: expired, expires: expires, webPushKeys: keys)
        add(native, tags: baseTags, isTemplate: false)
        let templates = installation.templates ?? [:]
        // A payload takes at most 4 KB on every service: four renderings fit the bound.
        let many = templates.count > DispatchPlanner.renderedBytesPerOwner / 4096
        for (name, template) in templates.sorted(by: { $0.key < $1.key }) {
            guard let body = template.body else { continue }
            let (compiled, number) = number(body: body, platform: installation.platform)
            let target = DeliveryTarget(
                owner: owner, hub: hub, device: device, platform: installation.platform, templateName: name, template: compiled,
                templateNumber: number, expired: expired, expires: expires, webPushKeys: keys, manyTemplates: many)
            add(target, tags: baseTags + (template.tags ?? [name]), isTemplate: true)
        }
    }

    /// An expiry as targets keep it: seconds since 1970, infinity for never (or unreadable).
    static func expiry(_ text: String?) -> Double {
        guard let text, text != W3CDate.never, let date = W3CDate.parse(text) else { return .infinity }
        return date.timeIntervalSince1970
    }

    /// A handle as targets and deliveries name it: APNs tokens are hexadecimal and compared
    /// ignoring case, so lower-cased; FCM tokens and Web Push endpoints are case-sensitive.
    public static func device(_ handle: String, platform: Platform) -> String {
        platform == .apns ? handle.lowercased() : handle
    }

    /// Indexes a legacy registration, replacing what it had; `nil` removes it.
    public mutating func setRegistration(_ registration: Registration?, id: String) {
        let owner = Self.ownerKey(registration: id)
        removeOwner(owner)
        guard let registration else { return }
        let expires = Self.expiry(registration.expirationTime)
        if registration.kind == .appleTemplate, let body = registration.bodyTemplate {
            let (compiled, number) = number(body: body, platform: .apns)
            let target = DeliveryTarget(
                owner: owner, hub: "", device: registration.deviceToken.lowercased(), platform: .apns,
                templateName: registration.templateName ?? "", template: compiled, templateNumber: number, expires: expires)
            add(target, tags: registration.tags, isTemplate: true)
        } else {
            let target = DeliveryTarget(
                owner: owner, hub: "", device: registration.deviceToken.lowercased(), platform: .apns, templateName: nil,
                template: nil, templateNumber: -1, expires: expires)
            add(target, tags: registration.tags, isTemplate: false)
        }
    }

    /// The slots a send reaches: template targets for template sends, native ones otherwise;
    /// everyone of that kind when `expression` is nil.
    public func resolve(_ expression: TagExpression?, templates: Bool) -> Set<Int32> {
        let postings = templates ? templatePostings : nativePostings
        let universe = templates ? allTemplate : allNative
        guard let expression else { return universe }
        return evaluate(expression, postings: postings, universe: universe)
    }

    private func evaluate(_ e: TagExpression, postings: [String: Set<Int32>], universe: Set<Int32>) -> Set<Int32> {
        switch e {
        case .tag(let tag):
            return postings[tag] ?? []
        case .or(let terms):
            var result = Set<Int32>()
            for term in terms { result.formUnion(evaluate(term, postings: postings, universe: universe)) }
            return result
        case .not(let inner):
            return universe.subtracting(evaluate(inner, postings: postings, universe: universe))
        case .and(let terms):
            var positive: [Set<Int32>] = []
            var negative: [Set<Int32>] = []
            for term in terms {
                if case .not(let inner) = term {
                    negative.append(evaluate(inner, postings: postings, universe: universe))
                } else {
                    positive.append(evaluate(term, postings: postings, universe: universe))
                }
            }
            positive.sort { $0.count < $1.count }
            var result = positive.first ?? universe
            for set in positive.dropFirst() {
                if result.isEmpty { break }
                result.formIntersection(set)
            }
            for set in negative { result.subtract(set) }
            return result
        }
    }

    /// The compiled template and number of a body, counting one more user of it.
    private mutating func number(body: String, platform: Platform) -> (Template?, Int32) {
        let key = (platform.usesJSONTemplates ? "j" : "x") + body
        if let known = templateNumbers[key] {
            templateNumbers[key]!.users += 1
            return (known.template, known.number)
        }
        let compiled = platform.usesJSONTemplates ? try? Template.compiled(body: body) : nil
        let number: Int32
        if let free = freeTemplateNumbers.popFirst() {
            number = free
        } else {
            number = templateNumberEnd
            templateNumberEnd += 1
        }
        templateNumbers[key] = NumberedTemplate(template: compiled, number: number, users: 1)
        templateKeys[number] = key
        return (compiled, number)
    }

    /// One user fewer of a template number; the last one frees it.
    private mutating func release(templateNumber number: Int32) {
        guard number >= 0, let key = templateKeys[number] else { return }
        templateNumbers[key]!.users -= 1
        guard templateNumbers[key]!.users == 0 else { return }
        templateNumbers[key] = nil
        templateKeys[number] = nil
        freeTemplateNumbers.insert(number)
        // Numbers at the end are given back, so per-send caches shrink with the hub.
        while templateNumberEnd > 0, freeTemplateNumbers.remove(templateNumberEnd - 1) != nil { templateNumberEnd -= 1 }
    }

    private mutating func add(_ target: DeliveryTarget, tags: [String], isTemplate: Bool) {
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
            targets[Int(slot)] = target
        } else {
            slot = Int32(targets.count)
            targets.append(target)
        }
        slotsByOwner[target.owner, default: []].append(slot)
        tagsBySlot[slot] = tags
        if isTemplate {
            allTemplate.insert(slot)
            for tag in tags { templatePostings[tag, default: []].insert(slot) }
        } else {
            allNative.insert(slot)
            for tag in tags { nativePostings[tag, default: []].insert(slot) }
        }
    }

    private mutating func removeOwner(_ owner: String) {
        guard let slots = slotsByOwner.removeValue(forKey: owner) else { return }
        for slot in slots {
            let isTemplate = allTemplate.remove(slot) != nil
            if !isTemplate { allNative.remove(slot) }
            for tag in tagsBySlot.removeValue(forKey: slot) ?? [] {
                if isTemplate {
                    templatePostings[tag]?.remove(slot)
                    if templatePostings[tag]?.isEmpty == true { templatePostings[tag] = nil }
                } else {
                    nativePostings[tag]?.remove(slot)
                    if nativePostings[tag]?.isEmpty == true { nativePostings[tag] = nil }
                }
            }
            if let target = targets[Int(slot)] { release(templateNumber: target.templateNumber) }
            targets[Int(slot)] = nil
            freeSlots.append(slot)
        }
    }

    /// A stable registration id for an installation's projection, shaped like the service's
    /// (three dash-separated numbers).
    static func projectedRegistrationId(hub: String, owner: String, template: String) -> String {
        func fnv(_ text: String) -> UInt64 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in text.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            return hash
        }
        let a = fnv(hub + "/" + owner) % 9_000_000_000_000_000_000 + 1_000_000_000_000_000_000
        let b = fnv(owner + "/" + template) % 9_000_000_000_000_000_000 + 1_000_000_000_000_000_000
        return "\(a)-\(b)-\(template.isEmpty ? 1 : 2)"
    }
}
