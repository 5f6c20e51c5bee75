/// Who is calling, after authentication: the client entry that matched and, for a session token, what the token
/// says about the app user.
///
/// Hashable because it keys per-caller rate limits. Equality is *identity* — provider, client name, kind and the
/// session token's `sub` — not grants: a user whose refreshed session token lists one more trip is still the same
/// caller and shares one rate-limit bucket. Session tokens without `sub` share their client's bucket.
package struct AuthenticatedCaller: Sendable, Hashable, CustomStringConvertible {
    /// How the caller proved who it is.
    package enum Kind: String, Sendable, Hashable {
        /// A static API key of a trusted backend.
        case apiKey = "api-key"
        /// An app user's session JWT from the tenant's identity provider.
        case sessionToken = "session-token"
        /// The gateway itself (the acceptance check's probes): never a request's caller, grants nothing.
        case gateway
    }

    /// The provider the caller authenticated at; the caller is worthless at any other.
    package let provider: ProviderID
    /// The client entry's `name`.
    package let name: String
    /// The credential kind.
    package let kind: Kind
    /// The session token's `sub`, if it had a string one; `nil` for API keys.
    package let subject: String?
    /// The client's grants by token type.
    let grants: [TokenType: ClientConfig.Grant]
    /// For session tokens: the values of every claim a grant names (a string claim becomes one value); a claim
    /// that is absent or not a string or array of strings has no entry, so it grants nothing.
    let claimValues: [String: Set<String>]
    /// Whether the client may have a trusted driver's token for every task.
    let allowsAllTasks: Bool

    init(
        provider: ProviderID, name: String, kind: Kind, subject: String? = nil,
        grants: [TokenType: ClientConfig.Grant], claimValues: [String: Set<String>] = [:], allowsAllTasks: Bool = false
    ) {
        self.provider = provider
        self.name = name
        self.kind = kind
        self.subject = subject
        self.grants = grants
        self.claimValues = claimValues
        self.allowsAllTasks = allowsAllTasks
    }

    /// `<kind> client <name> at <provider>`; never a credential, subject or claim value.
    package var description: String { "\(kind.rawValue) client \(name) at \(provider)" }

    package static func == (lhs: AuthenticatedCaller, rhs: AuthenticatedCaller) -> Bool {
        lhs.provider == rhs.provider && lhs.name == rhs.name && lhs.kind == rhs.kind && lhs.subject == rhs.subject
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(provider)
        hasher.combine(name)
        hasher.combine(kind)
        hasher.combine(subject)
    }
}
