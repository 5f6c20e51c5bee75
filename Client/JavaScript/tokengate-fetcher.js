// TokenGate's browser client: the `authTokenFetcher` of Google's JavaScript Journey Sharing and Fleet Tracking
// libraries, fetching Fleet Engine tokens from a TokenGate gateway with the app user's session token.
//
// An ES module with no build step and no dependencies; `tokengate-fetcher.d.ts` beside it states the same contract
// for TypeScript. Documented in docs/client.md ("In the browser"); tested in a real Chromium against a real gateway
// by Tests/Browser/.
//
//   import { createAuthTokenFetcher } from './tokengate-fetcher.js';
//   const authTokenFetcher = createAuthTokenFetcher({
//     baseUrl: 'https://tokens.acme.example',
//     providerId: 'acme-rides',
//     credential: () => session.currentIdToken(),     // the app user's session JWT, asked on every request
//   });
//   new google.maps.journeySharing.FleetEngineTripLocationProvider({ projectId: 'acme-rides', authTokenFetcher, tripId });
//
// What it does, per token route and parameters (one cache entry per route):
//   * maps the library's {serviceType, context} to a token route for the page's `role` (the table in
//     docs/client.md): a rider page gets a consumer token for its trip, never a vehicle's;
//   * returns {token, expiresInSeconds}: seconds from now until the token expires, measured on the gateway's clock
//     (the answer's `Date` when the browser may read it, else `expiresAt - expiresIn` of the body, the gateway's
//     clock when it answered; `issuedAt` only when neither is there), so a page whose clock is minutes off never
//     hands Fleet Engine an expired token;
//   * reuses the token until the gateway's `refreshAfter` (on the page's clock), and while a refresh fails for a
//     passing reason (network, 5xx, 429) keeps returning it as long as it has `minRemainingSeconds` of life;
//   * concurrent calls for one route share one HTTP request;
//   * turns every error answer into a TokenGateError with the gateway's `code`, `status`, `retryAfter` and
//     `requestId`. Never retried: `context_ended` (remembered: that route is refused without a request until
//     clear()), `forbidden`, `no_token_for_context`, and every other 4xx; a 401 is retried once, and only when
//     `credential()` then returns a different session token (a refreshed login); a 429 whose `Retry-After` is at
//     most `maxRetryWaitSeconds` (default 5) is retried once after that wait, a longer one is thrown at once and
//     the route is not asked again before it has passed.

/** The `serviceType` values of google.maps.journeySharing.FleetEngineServiceType (the constants are these strings). */
export const FleetEngineServiceType = Object.freeze({
  TRIP_SERVICE: 'TRIP_SERVICE',
  VEHICLE_SERVICE: 'VEHICLE_SERVICE',
  DELIVERY_VEHICLE_SERVICE: 'DELIVERY_VEHICLE_SERVICE',
  TASK_SERVICE: 'TASK_SERVICE',
  UNKNOWN_SERVICE: 'UNKNOWN_SERVICE',
});

/** What a page is, which decides the token types it may ask for. */
export const Roles = Object.freeze(['consumer', 'driver', 'fleet', 'delivery-fleet']);

/** Error codes the gateway answers (docs/http-api.md) that the fetcher never retries. */
const FINAL_CODES = new Set(['context_ended', 'forbidden', 'no_token_for_context']);

/**
 * A failed token fetch. `code` is the gateway's error code (docs/http-api.md, "Errors"), or one of the fetcher's
 * own: `network_error` (no answer: the network, or a browser refusing a cross-origin answer), `timeout`,
 * `invalid_response` (a 200 without a token), `unexpected_status` (an error answer without TokenGate's body),
 * `unsupported_context` (the role asks for no token for this context; nothing is sent), `credential_unavailable`
 * (`credential()` threw or gave no session token), `invalid_options`.
 */
export class TokenGateError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {{status?: number, retryAfter?: number, requestId?: string, cause?: unknown}} [details]
   */
  constructor(code, message, details = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'TokenGateError';
    /** @type {string} the gateway's error code, or the fetcher's own */
    this.code = code;
    /** @type {number} the HTTP status, 0 when there was no answer */
    this.status = details.status ?? 0;
    /** @type {number | undefined} seconds to wait before asking again (429) */
    this.retryAfter = details.retryAfter;
    /** @type {string | undefined} the answer's X-Request-ID, to find the request in the gateway's log */
    this.requestId = details.requestId;
  }
}

/**
 * @typedef {object} AuthTokenContext
 * @property {string} [tripId]
 * @property {string} [vehicleId]
 * @property {string} [deliveryVehicleId]
 * @property {string} [taskId]
 * @property {string} [trackingId]
 */

/**
 * @typedef {object} AuthTokenFetcherOptions what the Fleet Engine library passes
 * @property {string} [serviceType] a FleetEngineServiceType value
 * @property {AuthTokenContext} [context]
 */

/**
 * @typedef {object} AuthToken what the Fleet Engine library expects back
 * @property {string} token the Fleet Engine JWT
 * @property {number} expiresInSeconds whole seconds from now until it expires (never milliseconds)
 */

/**
 * @typedef {object} TokenRoute
 * @property {string} tokenType the gateway's token type (`consumer`, `driver`, …)
 * @property {Record<string, string>} parameters the route's query parameters
 * @property {string} url the whole request URL
 */

/**
 * @typedef {object} CachedToken what `peek` shows of a cached token
 * @property {string} token
 * @property {string} tokenType
 * @property {string} url
 * @property {number} expiresAt epoch seconds, the gateway's clock
 * @property {number | undefined} refreshAfter epoch seconds, the gateway's clock
 * @property {number} expiresAtLocal epoch milliseconds on the fetcher's clock (`now`)
 * @property {number} refreshAtLocal epoch milliseconds on the fetcher's clock: asked again from then on
 * @property {'date' | 'expiresIn' | 'issuedAt' | 'local'} clockSource what the gateway's clock was read from
 * @property {number} clockOffsetMs the gateway's clock minus the fetcher's, as estimated (conservatively high)
 */

/**
 * @typedef {object} CreateAuthTokenFetcherOptions
 * @property {string} baseUrl the gateway's public URL, e.g. `https://tokens.acme.example` (a path prefix is kept)
 * @property {string} providerId the provider (its Google Cloud project ID)
 * @property {() => (string | Promise<string>)} credential the app user's current session token, asked before
 *   every request (so a refreshed login is used)
 * @property {'consumer' | 'driver' | 'fleet' | 'delivery-fleet'} [role] the page's role (default `consumer`)
 * @property {() => number} [now] the clock, epoch milliseconds (default `Date.now`); for tests
 * @property {typeof fetch} [fetch] the fetch function (default: the global `fetch` at call time)
 * @property {number} [timeoutMs] one request's limit, answer body included (default 10000)
 * @property {number} [maxRetryWaitSeconds] the longest `Retry-After` a 429 is retried after, once (default 5; 0:
 *   never retried)
 * @property {number} [minRemainingSeconds] a cached token with less life left is not returned (default 120)
 */

/**
 * @callback AuthTokenFetcher
 * @param {AuthTokenFetcherOptions} options
 * @returns {Promise<AuthToken>}
 */

/**
 * Creates the `authTokenFetcher` for Fleet Engine's JavaScript location providers.
 *
 * @param {CreateAuthTokenFetcherOptions} options
 * @returns {AuthTokenFetcher & {
 *   route: (options: AuthTokenFetcherOptions) => TokenRoute,
 *   peek: (options: AuthTokenFetcherOptions) => (CachedToken | undefined),
 *   clear: () => void,
 * }}
 */
export function createAuthTokenFetcher(options) {
  if (options === null || typeof options !== 'object') throw invalid('options must be an object');
  const { baseUrl, providerId, credential } = options;
  if (typeof baseUrl !== 'string' || !/^https?:\/\/[^/]/i.test(baseUrl)) {
    throw invalid('baseUrl must be an http(s) URL');
  }
  if (typeof providerId !== 'string' || providerId === '') throw invalid('providerId must be a non-empty string');
  if (typeof credential !== 'function') throw invalid('credential must be a function returning the session token');
  const role = options.role ?? 'consumer';
  if (!Roles.includes(role)) throw invalid(`role must be one of ${Roles.join(', ')}`);
  const now = options.now ?? (() => Date.now());
  if (typeof now !== 'function') throw invalid('now must be a function returning epoch milliseconds');
  const fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const timeoutMs = positive(options.timeoutMs, 10000, 'timeoutMs');
  const maxRetryWaitSeconds = nonNegative(options.maxRetryWaitSeconds, 5, 'maxRetryWaitSeconds');
  const minRemainingMs = nonNegative(options.minRemainingSeconds, 120, 'minRemainingSeconds') * 1000;
  const prefix = `${baseUrl.replace(/\/+$/, '')}/v1/providers/${encodeURIComponent(providerId)}/tokens/`;

  /** @type {Map<string, CachedToken>} */
  const cache = new Map();
  /** @type {Map<string, Promise<CachedToken>>} */
  const inFlight = new Map();
  /** @type {Map<string, TokenGateError>} routes whose context an operator ended */
  const ended = new Map();
  /** @type {Map<string, {untilLocal: number, requestId?: string}>} routes refused by a rate limit, until */
  const coolingDown = new Map();

  /** @param {AuthTokenFetcherOptions} fetcherOptions @returns {TokenRoute} */
  function route(fetcherOptions) {
    const { tokenType, parameters } = routeFor(role, fetcherOptions ?? {});
    const query = new URLSearchParams(parameters).toString();
    return { tokenType, parameters, url: prefix + tokenType + (query ? `?${query}` : '') };
  }

  /** @type {AuthTokenFetcher} */
  async function authTokenFetcher(fetcherOptions) {
    const target = route(fetcherOptions);
    const refusal = ended.get(target.url);
    if (refusal) throw refusal;
    const cached = cache.get(target.url);
    const start = now();
    if (cached && start < cached.refreshAtLocal && cached.expiresAtLocal - start >= minRemainingMs) {
      return answer(cached, start);
    }
    let fresh;
    try {
      fresh = await shared(target);
    } catch (error) {
      const later = now();
      if (cached && passing(error) && cache.get(target.url) === cached && cached.expiresAtLocal - later >= minRemainingMs) {
        return answer(cached, later);
      }
      throw error;
    }
    return answer(fresh, now());
  }

  /** One request per route at a time: a caller arriving while one is out waits for its answer. */
  function shared(target) {
    let pending = inFlight.get(target.url);
    if (!pending) {
      pending = request(target).finally(() => inFlight.delete(target.url));
      inFlight.set(target.url, pending);
    }
    return pending;
  }

  /** @param {TokenRoute} target @returns {Promise<CachedToken>} */
  async function request(target) {
    const cooling = coolingDown.get(target.url);
    if (cooling) {
      const left = cooling.untilLocal - now();
      if (left > 0) {
        throw new TokenGateError('rate_limited', 'rate limited: not asking again before Retry-After has passed', {
          status: 429, retryAfter: Math.ceil(left / 1000), requestId: cooling.requestId,
        });
      }
      coolingDown.delete(target.url);
    }
    let session = await sessionToken();
    let retriedCredential = false;
    let retriedRateLimit = false;
    for (;;) {
      const exchange = await send(target, session);
      if (exchange.status === 200) {
        const entry = remember(target, exchange);
        cache.set(target.url, entry);
        return entry;
      }
      const error = failure(exchange);
      if (error.status === 401 && !retriedCredential) {
        retriedCredential = true;
        const renewed = await sessionToken();
        if (renewed !== session) {
          session = renewed;
          continue;
        }
      }
      if (error.status === 429 && error.retryAfter !== undefined) {
        if (!retriedRateLimit && error.retryAfter <= maxRetryWaitSeconds) {
          retriedRateLimit = true;
          await new Promise((resolve) => setTimeout(resolve, error.retryAfter * 1000));
          continue;
        }
        coolingDown.set(target.url, { untilLocal: now() + error.retryAfter * 1000, requestId: error.requestId });
      }
      if (error.code === 'context_ended') ended.set(target.url, error);
      if (!passing(error)) cache.delete(target.url);
      throw error;
    }
  }

  async function sessionToken() {
    let value;
    try {
      value = await credential();
    } catch (cause) {
      throw new TokenGateError('credential_unavailable', 'credential() failed', { cause });
    }
    if (typeof value !== 'string' || value === '') {
      throw new TokenGateError('credential_unavailable', 'credential() returned no session token');
    }
    return value;
  }

  /** One GET, answer body read, within timeoutMs. */
  async function send(target, session) {
    const controller = typeof AbortController === 'function' ? new AbortController() : undefined;
    const timer = setTimeout(() => controller?.abort(), timeoutMs);
    const sentAt = now();
    try {
      const response = await fetchImpl(target.url, {
        method: 'GET',
        headers: { Authorization: `Bearer ${session}`, Accept: 'application/json' },
        credentials: 'omit',
        redirect: 'error',
        signal: controller?.signal,
      });
      const receivedAt = now();
      let body;
      try {
        body = await response.json();
      } catch (cause) {
        if (controller?.signal.aborted) throw cause;
        body = undefined; // not JSON: judged by its status alone
      }
      return { status: response.status, headers: response.headers, body, sentAt, receivedAt };
    } catch (cause) {
      if (controller?.signal.aborted) {
        throw new TokenGateError('timeout', `no answer within ${timeoutMs} ms`, { cause });
      }
      // A browser that refuses a cross-origin answer (an origin the provider does not list) says no more than this.
      throw new TokenGateError('network_error', 'no answer from the gateway (network, or refused by CORS)', { cause });
    } finally {
      clearTimeout(timer);
    }
  }

  /** A 200's token, its expiry and refresh time moved onto this page's clock. */
  function remember(target, { headers, body, sentAt, receivedAt }) {
    if (!body || typeof body.token !== 'string' || body.token === '' || !finite(body.expiresAt)) {
      throw new TokenGateError('invalid_response', 'the answer carries no token and expiresAt', {
        status: 200, requestId: headers.get('X-Request-ID') ?? undefined,
      });
    }
    const { offsetMs, source } = clockOffset(headers, body, sentAt, receivedAt);
    const expiresAtLocal = body.expiresAt * 1000 - offsetMs;
    const latestRefresh = expiresAtLocal - minRemainingMs;
    let refreshAtLocal = finite(body.refreshAfter) ? body.refreshAfter * 1000 - offsetMs : latestRefresh;
    // A token already past its refreshAfter (the gateway refreshing it ahead) is asked for again after 30 s, not
    // on every call.
    refreshAtLocal = Math.min(Math.max(refreshAtLocal, receivedAt + 30000), latestRefresh);
    return {
      token: body.token,
      tokenType: target.tokenType,
      url: target.url,
      expiresAt: body.expiresAt,
      refreshAfter: finite(body.refreshAfter) ? body.refreshAfter : undefined,
      expiresAtLocal,
      refreshAtLocal,
      clockSource: source,
      clockOffsetMs: offsetMs,
    };
  }

  function clear() {
    cache.clear();
    ended.clear();
    coolingDown.clear();
  }

  /** @param {AuthTokenFetcherOptions} fetcherOptions */
  function peek(fetcherOptions) {
    const entry = cache.get(route(fetcherOptions).url);
    return entry ? { ...entry } : undefined;
  }

  return Object.assign(authTokenFetcher, { route, peek, clear });
}

/**
 * The token route for a page's role and the library's request. The context's IDs decide (the serviceType only
 * breaks a tie between two IDs); an ID the role may not have a token for is refused before anything is sent.
 *
 * @param {string} role
 * @param {AuthTokenFetcherOptions} options
 * @returns {{tokenType: string, parameters: Record<string, string>}}
 */
export function routeFor(role, { serviceType, context } = {}) {
  const ids = context ?? {};
  const id = (name) => (typeof ids[name] === 'string' && ids[name] !== '' ? ids[name] : undefined);
  const delivery = serviceType === 'DELIVERY_VEHICLE_SERVICE' || serviceType === 'TASK_SERVICE';
  switch (role) {
    case 'consumer':
      if (id('tripId')) return { tokenType: 'consumer', parameters: { tripId: id('tripId') } };
      if (id('trackingId')) return { tokenType: 'delivery-consumer', parameters: { trackingId: id('trackingId') } };
      if (id('taskId')) return { tokenType: 'delivery-consumer', parameters: { taskId: id('taskId') } };
      break;
    case 'driver':
      if (id('deliveryVehicleId') && (delivery || !id('vehicleId'))) {
        return { tokenType: 'delivery-driver', parameters: { deliveryVehicleId: id('deliveryVehicleId') } };
      }
      if (id('vehicleId')) return { tokenType: 'driver', parameters: { vehicleId: id('vehicleId') } };
      break;
    case 'fleet':
      return { tokenType: 'fleet-reader', parameters: {} };
    case 'delivery-fleet':
      return { tokenType: 'delivery-fleet-reader', parameters: {} };
    default:
      throw invalid(`unknown role ${String(role)}`);
  }
  throw new TokenGateError(
    'unsupported_context',
    `a ${role} page gets no token for ${String(serviceType)} with context ${JSON.stringify(ids)}`,
  );
}

/**
 * The gateway's clock minus the page's, in milliseconds, estimated high (a token's life is never overstated
 * through it): from the answer's `Date` when readable, else the body's `expiresAt - expiresIn` (the gateway's
 * clock when it answered), both whole seconds, so one second plus the request's round trip is added. Only
 * `issuedAt` left: it is the mint time, earlier than the answer by the token's age (a cached token's too), so it
 * only moves the page's clock forward (never back), and a page clock behind the gateway's is under-corrected by
 * at most the token's age.
 */
function clockOffset(headers, body, sentAt, receivedAt) {
  const roundTrip = Math.max(0, receivedAt - sentAt);
  const date = headers.get('Date');
  const dated = date ? Date.parse(date) : NaN;
  if (Number.isFinite(dated)) return { offsetMs: dated + 1000 + roundTrip - receivedAt, source: 'date' };
  if (finite(body.expiresIn)) {
    return { offsetMs: (body.expiresAt - body.expiresIn) * 1000 + 1000 + roundTrip - receivedAt, source: 'expiresIn' };
  }
  if (finite(body.issuedAt)) return { offsetMs: Math.max(0, body.issuedAt * 1000 - receivedAt), source: 'issuedAt' };
  return { offsetMs: 0, source: 'local' };
}

/** The TokenGateError an error answer stands for. */
function failure({ status, headers, body }) {
  const requestId = headers.get('X-Request-ID') ?? undefined;
  const retryAfter = parseRetryAfter(headers.get('Retry-After'));
  const code = body?.error?.code;
  if (typeof code === 'string' && code !== '') {
    const message = typeof body.error.message === 'string' ? body.error.message : code;
    return new TokenGateError(code, message, { status, retryAfter, requestId });
  }
  return new TokenGateError('unexpected_status', `HTTP ${status} without a TokenGate error body`, {
    status, retryAfter, requestId,
  });
}

/** Whether a failed refresh may leave a still-valid cached token in use: the network, a timeout, 5xx, 429. */
function passing(error) {
  if (!(error instanceof TokenGateError)) return false;
  if (FINAL_CODES.has(error.code)) return false;
  if (error.status === 0) return error.code === 'network_error' || error.code === 'timeout';
  return error.status === 429 || error.status >= 500;
}

function answer(entry, at) {
  return { token: entry.token, expiresInSeconds: Math.max(0, Math.floor((entry.expiresAtLocal - at) / 1000)) };
}

function parseRetryAfter(value) {
  if (value === null || value === undefined) return undefined;
  const text = String(value).trim();
  if (/^\d+$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isFinite(date) ? Math.max(0, Math.ceil((date - Date.now()) / 1000)) : undefined;
}

function finite(value) {
  return typeof value === 'number' && Number.isFinite(value);
}

function positive(value, fallback, name) {
  if (value === undefined) return fallback;
  if (!finite(value) || value <= 0) throw invalid(`${name} must be a positive number`);
  return value;
}

function nonNegative(value, fallback, name) {
  if (value === undefined) return fallback;
  if (!finite(value) || value < 0) throw invalid(`${name} must be a number, 0 or more`);
  return value;
}

function invalid(message) {
  return new TokenGateError('invalid_options', message);
}
