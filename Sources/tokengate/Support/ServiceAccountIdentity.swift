import TokenGateCore

/// A service account's email and Google Cloud project, as `keygen --service-account` writes them.
struct ServiceAccountIdentity {
    /// Google's domain for user-managed service accounts: `NAME@PROJECT.iam.gserviceaccount.com`.
    static let managedDomainSuffix = ".iam.gserviceaccount.com"

    let email: String
    let project: String

    /// Validates `email` (it becomes the `iss` and `sub` of every token) and takes the project from its domain when
    /// that is a user-managed service account's, else from `project`; the two must agree when both are given.
    init(email: String, project: String?) throws(CLIFailure) {
        guard Self.looksLikeEmail(email) else {
            throw CLIFailure(.usage, "--service-account '\(email)' is not an email address (NAME@PROJECT.iam.gserviceaccount.com)")
        }
        let domain = email.split(separator: "@", omittingEmptySubsequences: false)[1].lowercased()
        let derived = domain.hasSuffix(Self.managedDomainSuffix) ? String(domain.dropLast(Self.managedDomainSuffix.count)) : nil
        if let project, ProviderID(project) == nil {
            throw CLIFailure(.usage, "--project '\(project)' is not a Google Cloud project ID (6-30 of a-z, 0-9, '-')")
        }
        if let derived, ProviderID(derived) == nil {
            throw CLIFailure(.usage, "--service-account '\(email)': '\(derived)' is not a Google Cloud project ID")
        }
        switch (derived, project) {
        case (let derived?, let project?) where derived != project:
            throw CLIFailure(.usage, "--project '\(project)' differs from the service account's project '\(derived)'")
        case (let derived?, _): self.project = derived
        case (nil, let project?): self.project = project
        case (nil, nil):
            throw CLIFailure(.usage, "--service-account '\(email)' names no project: give --project")
        }
        self.email = email
    }

    /// One `@`, a plain ASCII local part, and a domain of at least two DNS labels. Deliberately narrower than
    /// RFC 5322: service-account emails are simple, and a typo should fail here rather than in every token.
    static func looksLikeEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...64).contains(parts[0].utf8.count), parts[1].utf8.count <= 253 else { return false }
        let localAllowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_+")
        guard parts[0].allSatisfy(localAllowed.contains), parts[0].first != ".", parts[0].last != "." else { return false }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        let labelAllowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
        return labels.count >= 2
            && labels.allSatisfy { label in
                (1...63).contains(label.utf8.count) && label.allSatisfy(labelAllowed.contains) && label.first != "-"
                    && label.last != "-"
            }
    }
}
