import Foundation
import JOSE

/// `credential_source.executable`: a program the operator names prints the subject token (Google's
/// executable-sourced credentials). It runs only when the operator allows programs to
/// (`GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1`, as Google's libraries require), without a shell, with
/// `timeout_millis` (5 s to 2 min, default 30 s) before it is killed. With `output_file`, a response the program
/// left there earlier is used while it lasts, without running it.
///
/// The program gets the process environment and, as Google's documentation lists them,
/// `GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE`, `_TOKEN_TYPE`, `_INTERACTIVE` ("0"), `_OUTPUT_FILE` (with `output_file`) and,
/// with impersonation, `_IMPERSONATED_EMAIL`; also `_ID` (that email, else empty) and `_REVOKE` ("0"), as
/// google-auth sets them. google-auth runs it without the impersonated email (from its impersonation's source
/// credentials); the documentation's set is followed here.
struct ExecutableSubjectSource: SubjectTokenSource {
    static let allowVariable = "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES"
    static let timeouts: ClosedRange<Int64> = 5_000...120_000
    static let defaultTimeout: Int64 = 30_000
    /// A response is a few kilobytes (a SAML one the most); more than this is not one.
    static let maximumOutputBytes = 256 * 1024

    let arguments: [String]
    let timeoutMillis: Int64
    let outputFile: String?
    let environment: [String: String]

    var summary: String { "the executable \(arguments[0])\(outputFile.map { " (output file \($0))" } ?? "")" }

    var fetchAllowance: Duration { .milliseconds(timeoutMillis) }

    /// `fields` is the `credential_source.executable` object.
    init(_ fields: CredentialFields, context: SubjectTokenContext) throws(GoogleAuthError) {
        let command = try fields.string("command")
        do {
            arguments = try ShellWords.split(command)
        } catch {
            throw fields.error("command", error == .unclosedQuote ? "has an unclosed quote" : "ends in a lone backslash")
        }
        // Google's documentation asks for an absolute path; no PATH search can then pick another program.
        guard let program = arguments.first, program.hasPrefix("/") else {
            throw fields.error("command", "does not start with the absolute path of a program")
        }
        let timeout = try fields.optionalInteger("timeout_millis", in: Self.timeouts)
        timeoutMillis = timeout ?? Self.defaultTimeout
        // Interactive runs (gcloud's) are never made here, but google-auth checks the bound all the same.
        _ = try fields.optionalInteger("interactive_timeout_millis", in: 30_000...1_800_000)
        outputFile = try fields.optionalString("output_file")
        guard context.environment[Self.allowVariable] == "1" else {
            throw fields.error(
                "command", "is not run: executables must be allowed explicitly (set \(Self.allowVariable)=1, as Google's libraries require)")
        }
        var environment = context.environment
        environment["GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE"] = context.audience
        environment["GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE"] = context.subjectTokenType
        environment["GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE"] = "0"
        environment["GOOGLE_EXTERNAL_ACCOUNT_REVOKE"] = "0"
        environment["GOOGLE_EXTERNAL_ACCOUNT_ID"] = context.impersonatedEmail ?? ""
        if let email = context.impersonatedEmail { environment["GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL"] = email }
        if let outputFile { environment["GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE"] = outputFile }
        self.environment = environment
    }

    func subjectToken(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> SubjectToken {
        let now = Int64(Date().timeIntervalSince1970)
        if let cached = try cachedResponse(now: now) {
            return SubjectToken(value: cached.token, provenance: "a subject token from \(summary), cached until \(cached.expiresAt ?? now)")
        }
        let stop = min(deadline, .now + .milliseconds(timeoutMillis))
        let outcome: ChildProcess.Outcome
        switch await ChildProcess.run(arguments, environment: environment, deadline: stop, maxOutputBytes: Self.maximumOutputBytes) {
        case .success(let result): outcome = result
        case .failure(let failure):
            throw GoogleAuthError(.configuration, "the executable \(arguments[0]) cannot be started (\(failure.reason))")
        }
        // The output is never quoted in an error: a failing program may have printed a credential.
        switch outcome.ending {
        case .exited(0): break
        case .exited(let status):
            throw GoogleAuthError(.credentialSourceFailed, "the executable \(arguments[0]) exited with status \(status)")
        case .signalled(let signal):
            throw GoogleAuthError(.credentialSourceFailed, "the executable \(arguments[0]) was killed by signal \(signal)")
        case .timedOut:
            throw GoogleAuthError(.timeout, "the executable \(arguments[0]) did not finish within \(timeoutMillis) ms and was killed")
        case .outputTooLarge:
            throw GoogleAuthError(.malformedAnswer, "the executable \(arguments[0]) printed more than \(Self.maximumOutputBytes) bytes")
        }
        // A program that printed nothing may have answered in its output file only (google-auth reads it then).
        let printed = !outcome.output.isEmpty
        let bytes: [UInt8]
        if printed {
            bytes = outcome.output
        } else if let outputFile {
            bytes = try CredentialsFile.read(outputFile, what: "the executable's output file", limit: Self.maximumOutputBytes)
        } else {
            throw GoogleAuthError(.malformedAnswer, "the executable \(arguments[0]) printed nothing")
        }
        let what = printed ? "the executable \(arguments[0])" : "the executable's output file \(outputFile ?? "")"
        guard let value = try? JSON.parse(bytes), case .object(let object) = value else {
            throw GoogleAuthError(.malformedAnswer, "\(what) answered with something other than a JSON object")
        }
        let response: ExecutableResponse
        do {
            response = try ExecutableResponse(object, now: now)
        } catch {
            switch error {
            case .malformed(let problem): throw GoogleAuthError(.malformedAnswer, "\(what)'s response \(problem)")
            case .unusable(let kind, let problem): throw GoogleAuthError(kind, "\(what)'s response \(problem)")
            }
        }
        let expiry = response.expiresAt.map { ", valid until \($0)" } ?? ""
        return SubjectToken(value: response.token, provenance: "a subject token from a run of \(summary)\(expiry)")
    }

    /// google-auth's reading of the output file: missing, unreadable or not JSON is no cache; a response that is
    /// malformed is an error; a valid one is used only if it succeeded, names its expiry and has not expired.
    private func cachedResponse(now: Int64) throws(GoogleAuthError) -> ExecutableResponse? {
        guard let outputFile, let bytes = try? CredentialsFile.read(outputFile, what: "the executable's output file", limit: Self.maximumOutputBytes),
            let value = try? JSON.parse(bytes)
        else { return nil }
        guard case .object(let object) = value else {
            throw GoogleAuthError(.malformedAnswer, "the executable's output file \(outputFile) holds something other than a JSON object")
        }
        do {
            let response = try ExecutableResponse(object, now: now)
            return response.expiresAt == nil ? nil : response
        } catch {
            guard case .malformed(let problem) = error else { return nil }
            throw GoogleAuthError(.malformedAnswer, "the executable's output file \(outputFile) holds a response that \(problem)")
        }
    }
}
