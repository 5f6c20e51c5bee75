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
//   * reuses the token until the gateway's `refreshAfter` (on the page's clock), and while a refresh fails for any
//     reason but the gateway's refusal (the network, 5xx, 429, an unusable answer, `credential()`) keeps returning
//     it as long as it has `minRemainingSeconds` of life, without asking again for `retryIntervalSeconds`;
//   * concurrent calls for one route share one HTTP request;
//   * puts each ID in the query as UTF-8 with every byte outside `A-Z a-z 0-9 - . _ ~` percent-encoded (a space is
//     %20, `+` is %2B), as the Swift and Android clients do, so any Fleet Engine ID arrives as it was given;
//   * turns every error answer into a TokenGateError with the gateway's `code`, `status`, `retryAfter` and
//     `requestId`, and answers each as the Swift and Android clients do (docs/client.md, "One error, three
//     clients"): the network, a timeout and 5xx are retried with backoff within `maxAttempts` (3); an answer with a
//     `Retry-After` of at most `maxRetryWaitSeconds` (5) is retried after exactly that, a longer one is thrown at
//     once, and a 429's keeps the route from being asked again before it has passed; a 401 is retried once, and
//     only when `credential()` then returns a different session token (a refreshed login); 400, 403, 404 and 410
//     are never retried, and they and a 401 drop the cached token; a 410 (`context_ended`) is remembered: the route
//     is refused without a request until clear(); a redirect is never followed (`invalid_response`).

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

/** The gateway's refusals (docs/http-api.md): never retried, and the route's cached token is dropped. */
const REFUSALS = new Set([400, 401, 403, 404, 410]);

/** The longest backoff between two attempts, in milliseconds. */
const MAX_BACKOFF_MS = 8000;

/**
 * A failed token fetch. `code` is the gateway's error code (docs/http-api.md, "Errors"), or one of the fetcher's
 * own: `network_error` (no answer: the network, or a browser refusing a cross-origin answer), `timeout`,
 * `invalid_response` (a 2xx without a token, or a redirect), `unexpected_status` (an error answer without TokenGate's
 * body), `unsupported_context` (the role asks for no token for this context; nothing is sent), `invalid_request` (an
 * ID that is not well-formed Unicode; nothing is sent), `credential_unavailable` (`credential()` threw or gave no
 * session token), `invalid_options`.
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
 * @property {number} [maxAttempts] attempts in all for the network, a timeout, 5xx and 429 (default 3)
 * @property {number} [initialBackoffMs] the wait before the first retry, doubled for each next one (capped at 8 s),
 *   each shortened by up to half at random (default 500)
 * @property {number} [maxRetryWaitSeconds] the longest `Retry-After` (429, 503) waited for before a retry; a longer
 *   one is thrown at once (default 5)
 * @property {number} [minRemainingSeconds] a cached token with less life left is not returned (default 120)
 * @property {number} [retryIntervalSeconds] after a failed request, a still-usable cached token is returned without
 *   asking again for this long (default 30)
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
  const maxAttempts = options.maxAttempts ?? 3;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw invalid('maxAttempts must be a whole number, 1 or more');
  const initialBackoffMs = nonNegative(options.initialBackoffMs, 500, 'initialBackoffMs');
  const maxRetryWaitSeconds = nonNegative(options.maxRetryWaitSeconds, 5, 'maxRetryWaitSeconds');
  const minRemainingMs = nonNegative(options.minRemainingSeconds, 120, 'minRemainingSeconds') * 1000;
  const retryIntervalMs = nonNegative(options.retryIntervalSeconds, 30, 'retryIntervalSeconds') * 1000;
  let encodedProvider;
  try {
    encodedProvider = percentEncoded(providerId, 'providerId');
  } catch (error) {
    throw invalid(error.message);
  }
  const prefix = `${baseUrl.replace(/\/+$/, '')}/v1/providers/${encodedProvider}/tokens/`;

  /** @type {Map<string, CachedToken>} */
  const cache = new Map();
  /** @type {Map<string, Promise<CachedToken>>} */
  const inFlight = new Map();
  /** @type {Map<string, TokenGateError>} routes whose context an operator ended */
  const ended = new Map();
  /** @type {Map<string, {untilLocal: number, error: TokenGateError}>} routes refused by a rate limit, until */
  const coolingDown = new Map();
  /** @type {Map<string, number>} routes whose last request failed: not asked again before, while a token serves */
  const retryNotBefore = new Map();

  /** @param {AuthTokenFetcherOptions} fetcherOptions @returns {TokenRoute} */
  function route(fetcherOptions) {
    const { tokenType, parameters } = routeFor(role, fetcherOptions ?? {});
    const query = Object.entries(parameters).map(([name, value]) => `${name}=${percentEncoded(value, name)}`).join('&');
    return { tokenType, parameters, url: prefix + tokenType + (query ? `?${query}` : '') };
  }

  /** @type {AuthTokenFetcher} */
  async function authTokenFetcher(fetcherOptions) {
    const target = route(fetcherOptions);
    const refusal = ended.get(target.url);
    if (refusal) {
      throw new TokenGateError(refusal.code, `${refusal.message} (remembered: no request sent)`, {
        status: refusal.status, requestId: refusal.requestId, cause: refusal,
      });
    }
    const cached = cache.get(target.url);
    const start = now();
    const usable = cached !== undefined && cached.expiresAtLocal - start >= minRemainingMs;
    if (usable && start < cached.refreshAtLocal) return answer(cached, start);
    // A request failed a moment ago: the token still serves, the gateway is not asked again at every call.
    if (usable && start < (retryNotBefore.get(target.url) ?? -Infinity)) return answer(cached, start);
    const cooling = coolingDown.get(target.url);
    if (cooling && start < cooling.untilLocal && !inFlight.has(target.url)) {
      if (usable) return answer(cached, start);
      throw new TokenGateError('rate_limited', 'rate limited: not asking again before Retry-After has passed', {
        status: 429, retryAfter: Math.ceil((cooling.untilLocal - start) / 1000), requestId: cooling.error.requestId,
        cause: cooling.error,
      });
    }
    let fresh;
    try {
      fresh = await shared(target);
    } catch (error) {
      // Anything but a refusal: the token cached for this route is still good enough while it has minRemaining.
      const later = now();
      const still = cache.get(target.url);
      const refused = !(error instanceof TokenGateError) || REFUSALS.has(error.status);
      if (!refused && still && still.expiresAtLocal - later >= minRemainingMs) return answer(still, later);
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

  /** The route's token from the gateway, and what its failure leaves behind for the next caller. */
  async function request(target) {
    let entry;
    try {
      entry = await attempts(target);
    } catch (error) {
      if (error instanceof TokenGateError) {
        const failedAt = now();
        retryNotBefore.set(target.url, failedAt + retryIntervalMs);
        if (REFUSALS.has(error.status)) cache.delete(target.url);
        if (error.status === 410) ended.set(target.url, error);
        if (error.status === 429 && error.retryAfter !== undefined) {
          coolingDown.set(target.url, { untilLocal: failedAt + error.retryAfter * 1000, error });
        }
      }
      throw error;
    }
    cache.set(target.url, entry);
    retryNotBefore.delete(target.url);
    coolingDown.delete(target.url);
    return entry;
  }

  /**
   * Up to `maxAttempts` requests: the network, a timeout, 5xx and 429 are tried again after backoff, or after exactly
   * `Retry-After` when the answer has one no longer than `maxRetryWaitSeconds`; a 401 once more, at once and outside
   * that count, when `credential()` then gives another session token. Nothing else is retried.
   * @param {TokenRoute} target @returns {Promise<CachedToken>}
   */
  async function attempts(target) {
    let session = await sessionToken();
    let askedAfterRefusal = false;
    for (let attempt = 1; ; ) {
      let error;
      try {
        return await once(target, session);
      } catch (thrown) {
        error = thrown;
      }
      if (error.status === 401 && !askedAfterRefusal) {
        askedAfterRefusal = true;
        const renewed = await sessionToken();
        if (renewed !== session) {
          session = renewed;
          continue;
        }
      }
      if (!passing(error) || attempt >= maxAttempts) throw error;
      let waitMs = Math.min(MAX_BACKOFF_MS, initialBackoffMs * 2 ** (attempt - 1)) * (1 - 0.5 * Math.random());
      if (error.retryAfter !== undefined) {
        if (error.retryAfter > maxRetryWaitSeconds) throw error;
        waitMs = error.retryAfter * 1000;
      }
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      attempt += 1;
      session = await sessionToken(); // asked before every attempt: a refreshed login is used
    }
  }

  /** One request: the token of a 2xx answer, else the failure it stands for, thrown. */
  async function once(target, session) {
    const exchange = await send(target, session);
    if (exchange.status >= 200 && exchange.status < 300) return remember(target, exchange);
    throw failure(exchange);
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
        // Never followed: the request carries the app user's credential. `manual` (not `error`) tells a redirect
        // apart from a network failure, so that it is not retried as one.
        redirect: 'manual',
        signal: controller?.signal,
      });
      const receivedAt = now();
      if (response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400)) {
        throw new TokenGateError('invalid_response', 'the gateway answered with a redirect, which is never followed', {
          status: response.status, requestId: response.headers.get('X-Request-ID') ?? undefined,
        });
      }
      let body;
      try {
        body = await response.json();
      } catch (cause) {
        if (controller?.signal.aborted) throw cause;
        body = undefined; // not JSON: judged by its status alone
      }
      return { status: response.status, headers: response.headers, body, sentAt, receivedAt };
    } catch (cause) {
      if (cause instanceof TokenGateError) throw cause;
      if (controller?.signal.aborted) {
        throw new TokenGateError('timeout', `no answer within ${timeoutMs} ms`, { cause });
      }
      // A browser that refuses a cross-origin answer (an origin the provider does not list) says no more than this.
      throw new TokenGateError('network_error', 'no answer from the gateway (network, or refused by CORS)', { cause });
    } finally {
      clearTimeout(timer);
    }
  }

  /** A 2xx's token, its expiry and refresh time moved onto this page's clock. */
  function remember(target, { status, headers, body, sentAt, receivedAt }) {
    if (!body || typeof body.token !== 'string' || body.token === '' || !finite(body.expiresAt)) {
      throw new TokenGateError('invalid_response', 'the answer carries no token and expiresAt', {
        status, requestId: headers.get('X-Request-ID') ?? undefined,
      });
    }
    const { offsetMs, source } = clockOffset(headers, body, sentAt, receivedAt);
    const expiresAtLocal = body.expiresAt * 1000 - offsetMs;
    if (expiresAtLocal <= receivedAt) {
      throw new TokenGateError('invalid_response', 'the token had expired on receipt', {
        status, requestId: headers.get('X-Request-ID') ?? undefined,
      });
    }
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
    retryNotBefore.clear();
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

/**
 * Whether a failure may pass: retried, and a still-valid cached token returned meanwhile. The network, a timeout, 5xx
 * and 429 (whatever the body: a proxy's 502 page too).
 */
function passing(error) {
  if (!(error instanceof TokenGateError)) return false;
  if (error.status === 0) return error.code === 'network_error' || error.code === 'timeout';
  return error.status === 429 || error.status >= 500;
}

/**
 * `text` as UTF-8 with every byte outside RFC 3986's unreserved `A-Z a-z 0-9 - . _ ~` written `%XX`, as the Swift
 * and Android clients send IDs: encodeURIComponent, plus the five it leaves (`! ' ( ) *`). A space is `%20` and `+`
 * is `%2B`, which every server decodes alike (URLSearchParams' `+` for a space is read as a plus by some).
 */
function percentEncoded(text, name) {
  let encoded;
  try {
    encoded = encodeURIComponent(text);
  } catch (cause) {
    throw new TokenGateError('invalid_request', `the ${name} is not valid text (an unpaired surrogate)`, { cause });
  }
  return encoded.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function answer(entry, at) {
  return { token: entry.token, expiresInSeconds: Math.max(0, Math.floor((entry.expiresAtLocal - at) / 1000)) };
}

/**
 * `Retry-After` as delta-seconds, the form the gateway sends. An HTTP-date is ignored (backoff applies), as the other
 * clients ignore it: it would be read against the page's clock, which may be off.
 */
function parseRetryAfter(value) {
  if (value === null || value === undefined) return undefined;
  const text = String(value).trim();
  return /^\d{1,9}$/.test(text) ? Number(text) : undefined;
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
