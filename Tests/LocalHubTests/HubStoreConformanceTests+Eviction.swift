import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// Over the log's cap, the largest holders give first, their oldest first (issue 49): one
/// device whose templates expand every send to kilobytes once pushed out an offline reader's
/// unread broadcasts, which cost the log a few dozen bytes each.
extension HubStoreConformanceTests {
    /// Five sends: each a broadcast to four readers (one payload they share), four renderings
    /// of 3.5 KB for `ee` and two for `ff` (a payload each).
    static func amplifiedSends(on store: any HubStore) async throws {
        let big = { (device: String, n: Int, t: Int) in
            #"{"aps":{"alert":"\#(device)\#(n)-\#(t)\#(String(repeating: "x", count: 3_480))"}}"#
        }
        for n in 1...5 {
            let id = "s\(n)"
            var sent = Self.notification(id, at: Double(n))
            try await store.apply([.insertNotification(sent)])
            sent.state = .completed
            sent.ended = Self.t0
            var deliveries = ["rr", "aa", "bb", "cc"].map { device in
                Delivery(
                    seq: 0, hub: "news", device: device, notificationId: id, template: "t",
                    payload: #"{"aps":{"alert":"Quake hits coast, \#(n)"}}"#, delivered: Self.t0 + Double(n), tags: "World")
            }
            for (device, templates) in [("ee", 4), ("ff", 2)] {
                for t in 0..<templates {
                    deliveries.append(
                        Delivery(
                            seq: 0, hub: "news", device: device, notificationId: id, template: "e\(t)",
                            payload: big(device, n, t),
                            delivered: Self.t0 + Double(n), tags: "World"))
                }
            }
            if !(store is any SharedHubStore) {
                let high = try await store.sequenceHighWater()
                try await store.reserveSequence(through: high + Int64(deliveries.count))
                for d in deliveries.indices { deliveries[d].seq = high + 1 + Int64(d) }
            }
            _ = try await store.record([DispatchRecord(notification: sent, deliveries: deliveries)])
        }
    }

    @Test(arguments: Kind.inThisTier)
    func overTheCapTheLargestHolderGivesItsOldestFirst(kind: Kind) async throws {
        let (store, reopen) = try await kind.make()
        try await Self.amplifiedSends(on: store)
        func seqs(_ device: String, _ store: any HubStore) async throws -> [Int64] {
            try await store.deliveries(hub: "news", device: device, after: 0, limit: 100).map(\.seq)
        }
        let everything = try await store.usage().deliveryLogBytes
        let ee = try await seqs("ee", store)
        #expect(ee.count == 20)
        // 20 KB to go: `ee` holds the most (70 KB to ff's 35), and gives six of its oldest.
        let first = try await store.prune(before: Self.t0, maximumLogBytes: everything - 20_000)
        #expect(first.deliveries == 6 && first.devices == 1, "\(first)")
        for current in [store, try await reopen()] {
            #expect(try await seqs("ee", current) == Array(ee.dropFirst(6)))
            #expect(try await current.gap(hub: "news", device: "ee") == DeliveryGap(from: ee[0], through: ee[5], count: 6))
            #expect(try await seqs("ff", current).count == 10)
            for reader in ["rr", "aa", "bb", "cc"] {
                #expect(try await seqs(reader, current).count == 5)
                #expect(try await current.gap(hub: "news", device: reader) == nil)
            }
            #expect(try await current.usage().deliveryLogBytes <= everything - 20_000)
        }
        // To 30 KB: `ee` down to `ff`'s level, then both together; the readers keep everything.
        let ff = try await seqs("ff", store)
        let second = try await store.prune(before: Self.t0, maximumLogBytes: 30_000)
        #expect(second.devices == 2, "\(second)")
        let eeLeft = try await seqs("ee", store)
        let ffLeft = try await seqs("ff", store)
        #expect(!eeLeft.isEmpty && eeLeft == Array(ee.suffix(eeLeft.count)), "the newest kept: \(eeLeft)")
        #expect(!ffLeft.isEmpty && ffLeft.count < 10 && ffLeft == Array(ff.suffix(ffLeft.count)), "\(ffLeft)")
        #expect(abs(eeLeft.count - ffLeft.count) <= 1, "brought to one level: \(eeLeft.count) and \(ffLeft.count)")
        for reader in ["rr", "aa", "bb", "cc"] { #expect(try await seqs(reader, store).count == 5) }
        let usage = try await store.usage()
        #expect(usage.deliveryLogBytes <= 30_000)
        #expect(usage.deliveries == Int64(20 + eeLeft.count + ffLeft.count))
    }

    /// Every delivery is charged its row and its share of its payload: what the devices hold
    /// adds up to the log, and a level frees exactly what is asked of it.
    @Test func theLevelFreesWhatIsAskedAndNoDeviceBelowItGives() {
        var generator = SplitMix(seed: 49)
        for _ in 0..<500 {
            let count = Int.random(in: 1...12, using: &generator)
            let holdings = Dictionary(
                uniqueKeysWithValues: (0..<count).map { ($0, Double.random(in: 0...1000, using: &generator)) })
            let total = holdings.values.reduce(0, +)
            let excess = Double.random(in: 1...1200, using: &generator)
            let gives = HolderEviction.gives(holdings, excess: excess)
            let given = gives.values.reduce(0, +)
            #expect(abs(given - min(excess, total)) < 1e-6, "\(holdings) \(excess) \(gives)")
            let kept = holdings.map { device, holding in holding - (gives[device] ?? 0) }
            let level = kept.max() ?? 0
            for (device, holding) in holdings {
                if let give = gives[device] {
                    #expect(give > 0 && abs(holding - give - level) < 1e-6, "a giver ends at the level")
                } else {
                    #expect(holding <= level + 1e-6, "a device below the level gives nothing")
                }
            }
        }
        #expect(HolderEviction.gives(["a": 10.0], excess: 0).isEmpty)
    }
}
