/// An authorizer URL with `{placeholder}`s, checked at load and expanded per request with percent-encoded values.
///
/// The rules are ``URLTemplate``'s, as for the upstream backend: placeholders stand only in the path and query, so no
/// caller can send the question to another server, and values are percent-encoded.
package struct AuthorizerURLTemplate: Sendable, Equatable, CustomStringConvertible {
    /// What a placeholder stands for.
    package enum Placeholder: String, Sendable, CaseIterable {
        /// The session token's `sub`; for an api-key client, the client's name.
        case subject
        /// The client entry's `name`.
        case client
        /// The provider ID.
        case providerId
        /// The token type asked for (`consumer`, `driver`, …).
        case tokenType
        /// The context's one ID, whatever its kind (a trusted driver's vehicle); empty for a batch or a whole fleet.
        case contextId
        /// The request parameter of that name (`taskIds`: a batch's tasks, comma-separated); empty when the request
        /// names a context of another kind.
        case tripId, vehicleId, deliveryVehicleId, trackingId, taskId, taskIds
    }

    let template: URLTemplate

    /// The template as configured.
    package var description: String { template.description }

    /// The placeholders the template uses.
    package var placeholders: Set<Placeholder> { Set(template.placeholders.compactMap(Placeholder.init(rawValue:))) }

    /// Splits `template` into literals and placeholders; the error message says what is wrong (the caller locates
    /// it). Scheme, host and credentials are checked by the caller, on a sample expansion (``sample``).
    package init(parsing template: String) throws(AuthorizerURLTemplateError) {
        do {
            self.template = try URLTemplate(parsing: template, placeholders: Placeholder.allCases.map(\.rawValue))
        } catch {
            throw AuthorizerURLTemplateError(error.message)
        }
    }

    /// The URL with every placeholder replaced by `x`: what the URL checks look at.
    package var sample: String { template.sample }

    /// The URL that asks about `context` for `subject`, or `nil` when a value cannot travel safely (a path segment
    /// made only of dots).
    func url(subject: String, client: String, provider: ProviderID, context: TokenContext) -> String? {
        template.expand { name in
            Placeholder(rawValue: name).map { Self.value(of: $0, subject: subject, client: client, provider: provider, context: context) } ?? ""
        }
    }

    static func value(
        of name: Placeholder, subject: String, client: String, provider: ProviderID, context: TokenContext
    ) -> String {
        switch name {
        case .subject: subject
        case .client: client
        case .providerId: provider.rawValue
        case .tokenType: context.tokenType.rawValue
        case .contextId: context.id?.rawValue ?? ""
        case .tripId, .vehicleId, .deliveryVehicleId, .trackingId, .taskId, .taskIds:
            context.parameters.first { $0.name == name.rawValue }?.value ?? ""
        }
    }
}

/// Why an authorizer URL template was refused.
package struct AuthorizerURLTemplateError: Error, Sendable, Equatable {
    /// What is wrong, without location (the parser adds it).
    package let message: String
    init(_ message: String) { self.message = message }
}
