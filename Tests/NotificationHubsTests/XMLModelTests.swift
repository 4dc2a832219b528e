import NotificationHubs
import Testing

struct XMLModelTests {
    /// The legacy iOS SDK's template registration body (docs shape, with a space in Tags).
    static let legacyBody = """
        <?xml version="1.0" encoding="utf-8"?>
        <entry xmlns="http://www.w3.org/2005/Atom">
          <content type="text/xml">
            <AppleTemplateRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance"
                xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
              <Tags>World, Sports</Tags>
              <DeviceToken>62BCD348A8FA</DeviceToken>
              <BodyTemplate><![CDATA[{"aps":{"alert":"$(messageParam)"}}]]></BodyTemplate>
              <Expiry>0</Expiry>
              <TemplateName>simpleAPNSTemplate</TemplateName>
            </AppleTemplateRegistrationDescription>
          </content>
        </entry>
        """

    @Test func readsALegacyTemplateRegistration() throws {
        let r = try Registration(atom: Self.legacyBody)
        #expect(r.kind == .appleTemplate)
        #expect(r.tags == ["World", "Sports"])
        #expect(r.deviceToken == "62BCD348A8FA")
        #expect(r.bodyTemplate == #"{"aps":{"alert":"$(messageParam)"}}"#)
        #expect(r.expiry == "0")
        #expect(r.templateName == "simpleAPNSTemplate")
    }

    @Test func writesMembersInDataContractOrder() throws {
        var r = try Registration(atom: Self.legacyBody)
        r.registrationId = "1-2-3"
        r.etag = "1"
        r.expirationTime = "9999-12-31T23:59:59.9999999Z"
        let xml = r.descriptionXML
        let order = [
            "<ETag>", "<ExpirationTime>", "<RegistrationId>", "<Tags>", "<DeviceToken>", "<BodyTemplate>", "<Expiry>",
            "<TemplateName>", "<ApnsHeaders",
        ]
        let positions = order.map { xml.range(of: $0)?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil })
        #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted())
        // Round trip through a response entry and a feed.
        let entry = r.responseEntryXML(
            selfURL: "https://h/hub/registrations/1-2-3?api-version=2015-01", published: "p", updated: "u")
        #expect(try Registration(atom: entry) == r)
        let feed = Registration.feedXML(selfURL: "https://h/hub/registrations", updated: "u", entries: [entry, entry])
        #expect(try Registration.parseFeed(feed) == [r, r])
    }

    @Test func bodyTemplateWithCDATAEndSurvives() throws {
        var r = Registration(kind: .appleTemplate, deviceToken: "AB", bodyTemplate: #"{"a":"]]>"}"#, templateName: "t")
        r.registrationId = "x"
        #expect(try Registration(atom: r.requestEntryXML).bodyTemplate == #"{"a":"]]>"}"#)
    }

    @Test func nativeRegistrationAndUnsupportedKinds() throws {
        let native = Registration(kind: .appleNative, deviceToken: "AB", tags: ["a"])
        #expect(try Registration(atom: native.requestEntryXML) == native)
        let gcm =
            #"<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><GcmRegistrationDescription><GcmRegistrationId>x</GcmRegistrationId></GcmRegistrationDescription></content></entry>"#
        let error = try #require(throws: InstallationError.self) { try Registration(atom: gcm) }
        #expect(error.description.contains("GcmRegistrationDescription"))
    }

    @Test func notificationOutcomeShape() throws {
        let empty = NotificationOutcome(success: 0, failure: 0, results: [])
        #expect(
            empty.xml
                == #"<NotificationOutcome xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><Success>0</Success><Failure>0</Failure><Results i:nil="true"/></NotificationOutcome>"#
        )
        let one = NotificationOutcome(
            success: 1, failure: 1,
            results: [
                .init(applicationPlatform: "apple", pnsHandle: "AB", registrationId: "1-2-3", outcome: NotificationOutcome.sent),
                .init(
                    applicationPlatform: "apple", pnsHandle: "CD", registrationId: "4-5-6",
                    outcome: NotificationOutcome.invalidPayload),
            ])
        #expect(try NotificationOutcome(xml: one.xml) == one)
        #expect(one.xml.contains("<RegistrationResult><ApplicationPlatform>apple</ApplicationPlatform><PnsHandle>AB</PnsHandle>"))
    }

    @Test func notificationDetailsRoundTrip() throws {
        let details = NotificationDetails(
            notificationId: "n1", location: "https://h/hub/messages/n1", state: .completed, enqueueTime: "e", startTime: "s",
            endTime: "f", notificationBody: #"{"messageParam":"<&>"}"#, tags: "World", targetPlatforms: "apple",
            outcomeCounts: [.apns: ["Success": 2, "InvalidNotificationSize": 1], .fcmV1: ["ExpiredChannel": 1]])
        #expect(try NotificationDetails(xml: details.xml) == details)
        // In the order .NET reads them.
        #expect(details.xml.contains("</ApnsOutcomeCounts><FcmV1OutcomeCounts><Outcome><Name>ExpiredChannel</Name>"))
    }

    @Test func errorBodyShape() {
        let body = ServiceErrorBody(code: 404, detail: "Installation not found")
        let xml = body.xml(trackingId: "t-1", timestamp: "1/1/2026 10:00:00 AM")
        #expect(
            xml
                == "<Error><Code>404</Code><Detail>Installation not found.TrackingId:t-1,TimeStamp:1/1/2026 10:00:00 AM</Detail></Error>"
        )
        #expect(ServiceErrorBody(xml: xml)?.code == 404)
        #expect(ServiceErrorBody(xml: "garbage") == nil)
    }

    /// A refused value quoted in a detail cannot break it over lines or reach a terminal as
    /// an escape sequence.
    @Test func errorDetailsAreOneLineWithoutControlCharacters() {
        let xml = ServiceErrorBody(code: 400, detail: "the apns pushChannel 'ab\r\ncd\u{1B}[2J\tx' is not hex")
            .xml(trackingId: "t", timestamp: "now")
        #expect(xml.contains("'ab??cd?[2J?x'"), "\(xml)")
        #expect(!xml.unicodeScalars.contains { $0.properties.generalCategory == .control })
    }

    @Test(arguments: ["", "<a>", "<a></b>", "<a x=1/>", "<!DOCTYPE a><a/>", "<a>&bogus;</a>", "<a/><b/>"])
    func malformedXMLIsAnError(text: String) {
        #expect(throws: XMLParseError.self) { try XMLNode(parsing: text) }
    }
}
