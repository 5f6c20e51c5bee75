package dev.tokengate.android;

/**
 * Returns the app's current credential for the gateway: the signed-in user's session token (a JWT from the tenant's
 * identity provider), or an API key. Asked before every request, retries included, so a refreshed login is used.
 *
 * <pre>{@code
 * CredentialSource credential = () -> session.currentIdToken();   // may block: it runs on the SDK's thread
 * }</pre>
 *
 * <p>Called from the threads that ask for tokens (the SDK's background threads, and the provider's refresh thread):
 * it must be thread-safe. Whatever it throws becomes a {@link CredentialUnavailableException} with it as the cause.
 */
public interface CredentialSource {
    /** The credential to send as {@code Authorization: Bearer <credential>}; never logged by this library. */
    String credential() throws Exception;
}
