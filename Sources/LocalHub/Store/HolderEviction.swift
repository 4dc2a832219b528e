import Foundation

/// Who gives what when the delivery log is over its cap: the device holding the most bytes
/// first, its oldest deliveries first, until the log fits or another device holds as much;
/// then both, and so on. A delivery is charged its row (`deliveryRowBytes`) and its payload's
/// bytes divided among the deliveries sharing it, so a broadcast costs each reader little and
/// a payload rendered for one device costs that device all of it. Each store measures what
/// its devices hold and removes what this says; the age limit and the oldest-first cut stay
/// what bound the log (`HubStore.prune`).
enum HolderEviction {
    /// Passes of measuring and removing in one prune: removing a delivery whose payload others
    /// share frees less than it was charged, so a pass may leave the log over its cap.
    static let passes = 4

    /// What each device gives for `excess` bytes to go, from `holdings` (bytes each holds):
    /// every device above a level gives what it holds above it, and those below give nothing.
    /// The level is the highest that frees `excess`; 0 when the log holds less than that.
    static func gives<Device: Hashable>(_ holdings: [Device: Double], excess: Double) -> [Device: Double] {
        guard excess > 0 else { return [:] }
        let sorted = holdings.filter { $0.value > 0 }.sorted { $0.value > $1.value }
        var above = 0.0  // what the devices before `index` hold together
        var level = 0.0
        for index in sorted.indices {
            above += sorted[index].value
            let next = index + 1 < sorted.count ? sorted[index + 1].value : 0
            // The first `index + 1` devices brought down to the next one's holding free this.
            if above - Double(index + 1) * next >= excess {
                level = (above - excess) / Double(index + 1)
                break
            }
        }
        var gives: [Device: Double] = [:]
        for (device, holding) in sorted where holding > level { gives[device] = holding - level }
        return gives
    }

    /// What one delivery is charged of a payload of `bytes` shared by `sharing` deliveries.
    static func charge(payloadBytes bytes: Int64, sharing: Int64) -> Double {
        Double(deliveryRowBytes) + Double(bytes) / Double(max(1, sharing))
    }
}
