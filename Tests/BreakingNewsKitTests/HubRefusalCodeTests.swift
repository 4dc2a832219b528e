import BreakingNewsKit
import NotificationHubs
import Testing

/// The app matches the local hub's refusals by their code, and Azure's, which carry none, by
/// their text.
struct HubRefusalCodeTests {
    @Test func aDeviceNotRegisteredIsKnownByItsCodeWhateverItsText() {
        let reworded = HubError.status(404, detail: "No such terminal here", refusal: .deviceNotRegistered)
        #expect(reworded.isDeviceNotRegistered)
        #expect(BuiltInPushClient.failure(reworded, doing: "the stream") == .notRegistered)
    }

    @Test func anAzureShaped404WithoutACodeIsKnownByItsText() {
        let azure = HubError.status(404, detail: "Device abc is not registered")
        #expect(azure.refusal == nil)
        #expect(BuiltInPushClient.failure(azure, doing: "the stream") == .notRegistered)
    }

    @Test func aCodeOverridesTheText() {
        // Another refusal whose text happens to say "not registered" is not taken for one.
        let other = HubError.status(404, detail: "The path is not registered here", refusal: .notFound)
        #expect(!other.isDeviceNotRegistered)
        #expect(BuiltInPushClient.failure(other, doing: "the stream") == .noPushService)
    }

    @Test func aMissingHubAndRefusedRightsAreKnownByCodeOrByAzuresText() {
        #expect(HubError.status(404, detail: "reworded", refusal: .hubNotFound).isHubNotFound)
        #expect(HubError.status(404, detail: "The messaging entity 'x' could not be found").isHubNotFound)
        #expect(!HubError.status(404, detail: "The messaging entity 'x' could not be found", refusal: .notFound).isHubNotFound)
        #expect(HubError.status(403, detail: "reworded", refusal: .rightsRefused).isRightsRefusal)
        #expect(HubError.status(403, detail: "Send claim is required for this operation").isRightsRefusal)
        #expect(!HubError.status(403, detail: "a claim is required, says a full hub", refusal: .quotaExceeded).isRightsRefusal)
        #expect(
            HubProblem.fix(for: .status(404, detail: "reworded", refusal: .hubNotFound), doing: .sending, embedded: false) != nil)
    }
}
