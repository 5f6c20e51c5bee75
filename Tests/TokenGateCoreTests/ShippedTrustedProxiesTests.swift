import Foundation
import Testing

@testable import TokenGateCore

/// The `server.trustedProxies` of the shipped manifests, read by the gateway's own parser and applied by its own
/// `TrustedProxies.client`: behind Google's front ends each finds the app's address, and no address an app forges.
/// The cases are the paths deploy/README.md ("Client addresses") describes.
@Suite struct ShippedTrustedProxiesTests {
    static let app = "198.51.100.7"
    static let forged = "192.0.2.66"

    /// A repository file, from this file's place in it.
    static func repositoryFile(_ path: String) throws -> [UInt8] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return Array(try Data(contentsOf: root.appending(path: path)))
    }

    /// A made-up value for every `${NAME}` in `bytes`: the secrets the manifests name are not the test's subject.
    static func environment(for bytes: [UInt8]) -> [String: String] {
        let text = String(decoding: bytes, as: UTF8.self)
        var names: [String: String] = [:]
        for match in text.matches(of: /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/) { names[String(match.1)] = "made-up" }
        return names
    }

    /// The trusted proxies of a config.yaml's text.
    static func trustedProxies(_ bytes: [UInt8], file: String) throws -> TrustedProxies {
        let root = try ConfigNode.parse(bytes, file: ConfigFile(path: file, environment: Self.environment(for: bytes)))
        let server = try #require(try root.mapping(allowedKeys: ConfigurationParser.topLevelKeys).optional("server"))
        return try #require(try ServerSettings.parse(server).trustedProxies, "\(file): server.trustedProxies is not set")
    }

    static func client(_ proxies: TrustedProxies, peer: String, forwarded: String?) -> String {
        proxies.client(peer: PeerAddress(parsing: peer)!, forwarded: forwarded.map { [Substring($0)] } ?? []).description
    }

    /// GKE's external Application Load Balancer, container-native: a Google front end (35.191.0.0/16, 130.211.0.0/22)
    /// connects to the pod and appends "<client>, <load balancer address>"; in-cluster callers connect from their pod.
    @Test func kubernetesFindsTheAppBehindTheLoadBalancerAndNoForgedAddress() throws {
        let bytes = try Self.repositoryFile("deploy/kubernetes/configmap.yaml")
        let manifest = try ConfigNode.parse(bytes, file: ConfigFile(path: "configmap.yaml", environment: Self.environment(for: bytes)))
        let data = try #require(try manifest.mapping(allowedKeys: ["apiVersion", "kind", "metadata", "data"]).optional("data"))
        let text = try #require(try data.mapping(allowedKeys: ["config.yaml"]).optional("config.yaml")).string()
        let proxies = try Self.trustedProxies(Array(text.utf8), file: "configmap.yaml: data.config.yaml")
        let balancer = "34.120.0.10"
        #expect(Self.client(proxies, peer: "35.191.4.9", forwarded: "\(Self.app), \(balancer)") == Self.app)
        #expect(Self.client(proxies, peer: "130.211.0.9", forwarded: "\(Self.forged), \(Self.app), \(balancer)") == Self.app)
        #expect(Self.client(proxies, peer: "10.8.1.5", forwarded: Self.forged) == "10.8.1.5")
    }

    /// Cloud Run's front end reaches the instance from a link-local address and appends the client it saw; the
    /// external Application Load Balancer (service.yaml's ingress) appends "<client>, <its address>" before that.
    @Test func cloudRunFindsTheAppFromTheVPCAndBehindTheLoadBalancerAndNoForgedAddress() throws {
        let proxies = try Self.trustedProxies(try Self.repositoryFile("deploy/cloud-run/config.yaml"), file: "cloud-run/config.yaml")
        let balancer = "203.0.113.10"
        #expect(proxies.trusts(PeerAddress(parsing: balancer)!), "the load balancer's address is trusted")
        for front in ["169.254.8.129", "169.254.169.126"] {
            #expect(Self.client(proxies, peer: front, forwarded: Self.app) == Self.app)
            #expect(Self.client(proxies, peer: front, forwarded: "\(Self.forged), \(Self.app)") == Self.app)
            #expect(Self.client(proxies, peer: front, forwarded: "\(Self.app), \(balancer)") == Self.app)
            #expect(Self.client(proxies, peer: front, forwarded: "\(Self.forged), \(Self.app), \(balancer)") == Self.app)
            // Cloud Run appending the client once more after the load balancer's entry.
            #expect(Self.client(proxies, peer: front, forwarded: "\(Self.app), \(balancer), \(Self.app)") == Self.app)
        }
        // Not through Google: an instance reached directly is its own peer.
        #expect(Self.client(proxies, peer: Self.forged, forwarded: Self.app) == Self.forged)
    }
}
