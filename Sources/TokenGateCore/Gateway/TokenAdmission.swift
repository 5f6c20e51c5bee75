/// A token request that passed every synchronous check before the tenant's own: its provider's pipeline, the token
/// type, the context and the authenticated caller.
///
/// The event loop's door hands it to the full path (``TokenService/token(for:)-(TokenAdmission)``) when only
/// waiting can answer, so a request is admitted once whichever door it came in by. It stays on the generation it
/// was admitted on.
package struct TokenAdmission: Sendable {
    let pipeline: ProviderPipeline
    let query: TokenQuery
    let type: TokenType
    let context: TokenContext
    let caller: AuthenticatedCaller

    /// The request's ID, as the query carried it.
    package var requestID: String? { query.requestID }
}
