package import JOSE

/// One caller that may ask a provider for tokens: a credential plus what it may have.
package struct ClientConfig: Sendable {
    /// How the caller proves who it is.
    package enum Credential: Sendable {
        /// A static API key for a trusted backend; the configuration holds only its SHA-256 digest.
        case apiKey(sha256: [UInt8])
        /// The app user's session JWT from the tenant's identity provider.
        case jwt(SessionTokenSettings)
    }

    /// What the caller may get for one token type.
    package enum Grant: Sendable, Equatable {
        /// Any context of that type (API-key callers only: trusted backends).
        case anyContext
        /// Only contexts listed in this claim of the caller's session token (a string or an array of strings).
        case claim(String)
        /// The wildcard token of a whole-fleet type (`fleet-reader`, `delivery-fleet-reader`, `server`), granted by
        /// name: `any` never grants one.
        case wholeFleet
    }

    /// A unique name, used in logs and rate-limit keys.
    package var name: String
    /// The credential.
    package var credential: Credential
    /// Grants by token type; a type not listed is forbidden.
    package var allow: [TokenType: Grant]
    /// A revoked client is refused as if its credential were wrong, and the log says why.
    package var isRevoked: Bool
    /// Whether this client's `trusted-delivery-driver` tokens may carry `taskid: "*"` (`allowAllTasks: true`).
    package var allowsAllTasks: Bool
    /// The tenant's own access check, asked after `allow` granted a request; `nil` when `allow` alone decides.
    package var authorizer: AuthorizerSettings?

    /// Creates a client.
    package init(
        name: String, credential: Credential, allow: [TokenType: Grant], isRevoked: Bool = false, allowsAllTasks: Bool = false,
        authorizer: AuthorizerSettings? = nil
    ) {
        self.name = name
        self.credential = credential
        self.allow = allow
        self.isRevoked = isRevoked
        self.allowsAllTasks = allowsAllTasks
        self.authorizer = authorizer
    }
}

/// How a session JWT is verified: the identity provider's keys, issuer and audience.
package struct SessionTokenSettings: Sendable {
    /// Where the identity provider's public keys come from: a `jwksFile:` read at load, or a `jwksUrl:` fetched by
    /// the generation's shared key set for that URL.
    package var keySource: KeySource
    /// The expected `iss`: the session-token keys are bound to it.
    package var issuer: String
    /// Accepted `aud` values (any-of).
    package var audiences: [String]
    /// Clock skew tolerated, seconds.
    package var leeway: Int64
    /// Whether `/readyz` waits for a `jwksUrl:` set's first fetch (default true: until then this client's users
    /// are refused). False for a client whose users may wait while everyone else is served.
    package var requiredForReadiness: Bool

    /// Settings verifying with `keySource`.
    package init(keySource: KeySource, issuer: String, audiences: [String], leeway: Int64, requiredForReadiness: Bool = true) {
        self.keySource = keySource
        self.issuer = issuer
        self.audiences = audiences
        self.leeway = leeway
        self.requiredForReadiness = requiredForReadiness
    }

    /// Settings verifying with a fixed key set (a `jwksFile:`).
    package init(keys: JWKSet, issuer: String, audiences: [String], leeway: Int64) {
        self.init(keySource: .fixed(keys), issuer: issuer, audiences: audiences, leeway: leeway)
    }
}
