import NotificationHubs
import Testing

struct ConnectionStringTests {
    @Test func parsesThePortalShape() throws {
        let cs = try ConnectionString(
            parsing:
                "Endpoint=sb://my-ns.servicebus.windows.net/;SharedAccessKeyName=DefaultListenSharedAccessSignature;SharedAccessKey=abc/def+ghi="
        )
        #expect(cs.scheme == "https")
        #expect(cs.host == "my-ns.servicebus.windows.net")
        #expect(cs.port == nil)
        #expect(cs.keyName == "DefaultListenSharedAccessSignature")
        #expect(cs.key == "abc/def+ghi=")  // split on the first '=' only
        #expect(cs.entityPath == nil)
        #expect(cs.hubURL("hub") == "https://my-ns.servicebus.windows.net/hub")
    }

    @Test func namesAreCaseInsensitiveAndTrailingSemicolonTolerated() throws {
        let cs = try ConnectionString(
            parsing: "endpoint=http://127.0.0.1:47474/;sharedaccesskeyname=Full;SHAREDACCESSKEY=k==;entitypath=news;")
        #expect(cs.scheme == "http")
        #expect(cs.port == 47474)
        #expect(cs.key == "k==")
        #expect(cs.entityPath == "news")
        #expect(cs.serviceRoot == "http://127.0.0.1:47474/")
    }

    @Test func httpsEndpointStaysHttps() throws {
        let cs = try ConnectionString(parsing: "Endpoint=https://host:8443;SharedAccessKeyName=a;SharedAccessKey=b")
        #expect(cs.serviceRoot == "https://host:8443/")
    }

    @Test func roundTripsThroughDescription() throws {
        let text = "Endpoint=sb://ns/;SharedAccessKeyName=a;SharedAccessKey=b=;EntityPath=h"
        #expect(try ConnectionString(parsing: text).description == text)
    }

    @Test(arguments: [
        ("", nil as String?),
        ("SharedAccessKeyName=a;SharedAccessKey=b", "Endpoint"),
        ("Endpoint=sb://ns/;SharedAccessKey=b", "SharedAccessKeyName"),
        ("Endpoint=sb://ns/;SharedAccessKeyName=a", "SharedAccessKey"),
        ("Endpoint=sb://ns/;SharedAccessKeyName=a;SharedAccessKey=", "SharedAccessKey"),
        ("Endpoint=ftp://ns/;SharedAccessKeyName=a;SharedAccessKey=b", "Endpoint"),
        ("Endpoint=not a url;SharedAccessKeyName=a;SharedAccessKey=b", "Endpoint"),
        ("Endpoint=sb:///;SharedAccessKeyName=a;SharedAccessKey=b", "Endpoint"),
        ("Endpoint=sb://ns/;SharedAccessKeyName=a;SharedAccessKey=b;EntityPath=", "EntityPath"),
        ("Endpoint=sb://ns/;Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=b", "Endpoint"),
        ("Endpoint=sb://ns/;garbage;SharedAccessKeyName=a;SharedAccessKey=b", nil),
        ("Endpoint=sb://ns/;SharedAccessKeyName=has space;SharedAccessKey=b", "SharedAccessKeyName"),
    ])
    func malformedStringsNameTheirPart(text: String, part: String?) {
        do {
            _ = try ConnectionString(parsing: text)
            Issue.record("'\(text)' was accepted")
        } catch {
            #expect(error.part == part, "\(error)")
            if let part { #expect(error.description.contains(part)) }
        }
    }

    /// A hub on this machine is told apart from Azure: the claim of a terminal's token is
    /// an error only there.
    @Test func loopbackEndpointsAreRecognised() throws {
        for (endpoint, loopback) in [
            ("http://127.0.0.1:47474/", true), ("http://localhost:1/", true), ("sb://ns.servicebus.windows.net/", false),
            ("https://127.example.com/", false),
        ] {
            let cs = try ConnectionString(parsing: "Endpoint=\(endpoint);SharedAccessKeyName=k;SharedAccessKey=dg==")
            #expect(cs.isLoopback == loopback, "\(endpoint)")
        }
    }
}
