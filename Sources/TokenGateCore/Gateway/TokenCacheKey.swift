/// A context's key in the shared store: a typed pair, so no string join can make two contexts collide. (Each
/// provider has a cache of its own, keyed by context alone.)
struct TokenCacheKey: Hashable, Sendable {
    var provider: ProviderID
    var context: TokenContext
}
