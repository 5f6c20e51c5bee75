import GoogleAuth
import JOSE
import ServiceLifecycle
import TokenGateCore

/// The signer's background work while its generation serves: gets the first access token at once (readiness waits
/// for it), then keeps it fresh, and asks IAM once per account whether it may sign, so a missing permission shows
/// in `/readyz` before the first rider does. An account IAM refused is asked again every `retryInterval` until
/// an operator grants it.
///
/// The question is a `signJwt` of a claim set no one accepts: `aud` `https://tokengate.invalid/readiness-probe`,
/// valid one minute, never stored or sent anywhere.
struct IAMSignerWarmUp: Service {
    let signer: GoogleIAMSigner
    var retryInterval: Duration = .seconds(5)
    var refreshInterval: Duration = .seconds(60)

    static let probeAudience = "https://tokengate.invalid/readiness-probe"

    func run() async throws {
        await cancelWhenGracefulShutdown { await loop() }
    }

    private func loop() async {
        var probed: Set<String> = []
        while !Task.isCancelled {
            var healthy = true
            do {
                _ = try await signer.iam.credentials.accessToken()
                signer.health.obtainedAccessToken()
                for account in signer.settings.accounts where !probed.contains(account) || signer.health.isForbidden(account) {
                    if (try? await Self.probe(account, with: signer)) != nil { probed.insert(account) } else { healthy = false }
                }
            } catch {
                signer.health.credentialsFailed("\(error)")
                healthy = false
            }
            do {
                try await Task.sleep(for: healthy ? refreshInterval : retryInterval)
            } catch {
                return  // cancelled: shutdown is not a failure
            }
        }
    }

    /// One `signJwt` of the probe's claim set as `account`.
    static func probe(_ account: String, with signer: GoogleIAMSigner) async throws(TokenGateError) {
        let now = signer.clock.wallSeconds()
        let claims: JSONObject = [
            "iss": .string(account), "sub": .string(account), "aud": .string(probeAudience), "iat": .integer(now),
            "exp": .integer(now + 60),
        ]
        _ = try await signer.sign(claims, as: account)
    }
}
