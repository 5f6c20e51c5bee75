// Types of tokengate-fetcher.js (the same contract as its JSDoc), for TypeScript and editors. See docs/client.md,
// "In the browser".

/** The `serviceType` values of google.maps.journeySharing.FleetEngineServiceType. */
export declare const FleetEngineServiceType: Readonly<{
  TRIP_SERVICE: 'TRIP_SERVICE';
  VEHICLE_SERVICE: 'VEHICLE_SERVICE';
  DELIVERY_VEHICLE_SERVICE: 'DELIVERY_VEHICLE_SERVICE';
  TASK_SERVICE: 'TASK_SERVICE';
  UNKNOWN_SERVICE: 'UNKNOWN_SERVICE';
}>;

/** What a page is, which decides the token types it may ask for (docs/client.md has the table). */
export type Role = 'consumer' | 'driver' | 'fleet' | 'delivery-fleet';
export declare const Roles: readonly Role[];

/** google.maps.journeySharing.AuthTokenContext */
export interface AuthTokenContext {
  tripId?: string;
  vehicleId?: string;
  deliveryVehicleId?: string;
  taskId?: string;
  trackingId?: string;
}

/** google.maps.journeySharing.AuthTokenFetcherOptions: what the Fleet Engine library passes. */
export interface AuthTokenFetcherOptions {
  serviceType?: string;
  context?: AuthTokenContext;
}

/** google.maps.journeySharing.AuthToken: what the Fleet Engine library expects back. */
export interface AuthToken {
  /** The Fleet Engine JWT. */
  token: string;
  /** Whole seconds from now until the token expires, on the gateway's clock (never milliseconds). */
  expiresInSeconds: number;
}

export interface CreateAuthTokenFetcherOptions {
  /** The gateway's public URL, e.g. `https://tokens.acme.example` (a path prefix is kept). */
  baseUrl: string;
  /** The provider: its Google Cloud project ID. */
  providerId: string;
  /** The app user's current session token, asked before every request (so a refreshed login is used). */
  credential: () => string | Promise<string>;
  /** The page's role; default `consumer`. */
  role?: Role;
  /** The clock, epoch milliseconds; default `Date.now`. For tests. */
  now?: () => number;
  /** The fetch function; default the global `fetch` at call time. */
  fetch?: typeof fetch;
  /** One request's limit, answer body included; default 10000. */
  timeoutMs?: number;
  /** Attempts in all for the network, a timeout, 5xx and 429; default 3. */
  maxAttempts?: number;
  /** The wait before the first retry, doubled for each next one (capped at 8 s), up to half less at random; default
   * 500. */
  initialBackoffMs?: number;
  /** The longest `Retry-After` (429, 503) waited for before a retry; a longer one is thrown at once. Default 5. */
  maxRetryWaitSeconds?: number;
  /** A cached token with less life left is not returned; default 120. */
  minRemainingSeconds?: number;
  /** After a failed request, a still-usable cached token is returned without asking again for this long; default 30. */
  retryIntervalSeconds?: number;
}

/**
 * The token route one request of the library maps to. In `url` each ID is UTF-8 with every byte outside
 * `A-Z a-z 0-9 - . _ ~` percent-encoded.
 */
export interface TokenRoute {
  /** The gateway's token type: `consumer`, `delivery-consumer`, `driver`, `delivery-driver`, `fleet-reader`, … */
  tokenType: string;
  /** The route's query parameters. */
  parameters: Record<string, string>;
  /** The whole request URL. */
  url: string;
}

/** What `peek` shows of a cached token. */
export interface CachedToken {
  token: string;
  tokenType: string;
  url: string;
  /** Epoch seconds on the gateway's clock. */
  expiresAt: number;
  /** Epoch seconds on the gateway's clock. */
  refreshAfter: number | undefined;
  /** Epoch milliseconds on the fetcher's clock (`now`). */
  expiresAtLocal: number;
  /** Epoch milliseconds on the fetcher's clock: the token is asked for again from then on. */
  refreshAtLocal: number;
  /** What the gateway's clock was read from. */
  clockSource: 'date' | 'expiresIn' | 'issuedAt' | 'local';
  /** The gateway's clock minus the fetcher's, in milliseconds, as estimated (high rather than low). */
  clockOffsetMs: number;
}

/** The function the library calls, with helpers for the page. */
export interface AuthTokenFetcher {
  (options: AuthTokenFetcherOptions): Promise<AuthToken>;
  /** The route a request maps to; throws `unsupported_context` as the fetcher would. */
  route(options: AuthTokenFetcherOptions): TokenRoute;
  /** The cached token for a request, if any. */
  peek(options: AuthTokenFetcherOptions): CachedToken | undefined;
  /** Forgets every cached token, ended context, rate-limit wait and failed request (the user logged out). */
  clear(): void;
}

/**
 * A failed token fetch: `code` is the gateway's error code (docs/http-api.md, "Errors") or one of the fetcher's
 * own: `network_error`, `timeout`, `invalid_response` (also a redirect, never followed), `unexpected_status`,
 * `unsupported_context`, `invalid_request` (an ID that is not well-formed Unicode), `credential_unavailable`,
 * `invalid_options`.
 */
export declare class TokenGateError extends Error {
  constructor(code: string, message: string, details?: {
    status?: number;
    retryAfter?: number;
    requestId?: string;
    cause?: unknown;
  });
  name: 'TokenGateError';
  /** The gateway's error code, or the fetcher's own. */
  code: string;
  /** The HTTP status; 0 when there was no answer. */
  status: number;
  /** Seconds to wait before asking again, from `Retry-After` in delta-seconds (429, some 503s). */
  retryAfter: number | undefined;
  /** The answer's X-Request-ID. */
  requestId: string | undefined;
}

/** Creates the `authTokenFetcher` for Fleet Engine's JavaScript location providers. */
export declare function createAuthTokenFetcher(options: CreateAuthTokenFetcherOptions): AuthTokenFetcher;

/** The token type and parameters for a role and a request of the library; throws `unsupported_context`. */
export declare function routeFor(
  role: Role,
  options?: AuthTokenFetcherOptions,
): { tokenType: string; parameters: Record<string, string> };
