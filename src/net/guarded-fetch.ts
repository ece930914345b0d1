// The HTTP client for URLs that customers configure (webhook tools, configuration endpoints, post-call webhooks):
// a `fetch`-compatible function that cannot be turned against the network Parley runs in. Per hop it parses the
// URL (http or https, no credentials), resolves the host once, refuses any address that is not public unicast
// (./address-policy.ts), and connects to exactly the addresses it checked (a pinned `lookup`, so a second DNS answer
// cannot swap them; TLS still verifies the certificate against the host name). Redirects are followed by hand, a
// bounded number, each hop checked again, https -> http refused. The response is read into memory up to a size
// cap, the whole exchange within a deadline. Refusals are GuardedFetchError, which callers record as they are.
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { addressClass } from './address-policy.js';

/** Defaults of the factory's limits. */
export const GUARDED_FETCH_DEFAULTS = {
  maxRedirects: 5,
  /** Webhook answers and configuration overrides are small JSON documents. */
  maxResponseBytes: 1024 * 1024,
  timeoutMs: 30_000,
} as const;

/** RFC 9110 15.4: the redirections a client may follow automatically. */
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Fetch standard: responses whose body is always null. */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);
/** Fetch standard, "HTTP-redirect fetch": credentials are not carried to another origin. */
const CROSS_ORIGIN_DROPPED_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];
/** Dropped when a redirect turns the request into a GET without body (RFC 9110 15.4.2-4). */
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];

export type GuardedFetchErrorKind =
  | 'invalid_url'
  | 'address_not_allowed'
  | 'unresolvable'
  | 'redirect_refused'
  | 'too_many_redirects'
  | 'response_too_large'
  | 'invalid_response'
  | 'timeout'
  | 'connection_failed';

/** Why the guarded client did not return a response. Its message is safe to record and show to the customer. */
export class GuardedFetchError extends Error {
  constructor(
    readonly kind: GuardedFetchErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'GuardedFetchError';
  }
}

/** A resolver: every address of a host name (node:dns `lookup` with `all: true` by default). */
export type ResolveAll = (hostname: string) => Promise<{ address: string; family: number }[]>;

export interface GuardedFetchOptions {
  /** PARLEY_ALLOW_PRIVATE_ENDPOINTS: every address may be called (development, tests). The other limits stay. */
  allowPrivate: boolean;
  /** Redirects followed per request, each checked like the first hop; 0 follows none (a redirect is an error). */
  maxRedirects?: number;
  /** The largest response body read; past it the connection is dropped and the call fails. */
  maxResponseBytes?: number;
  /** Deadline of the whole exchange (every hop, the body included). */
  timeoutMs?: number;
  resolve?: ResolveAll;
  /** Whether an address may be called (default: public unicast only, ./address-policy.ts). */
  isAllowedAddress?: (address: string) => boolean;
  /** Certificate authorities trusted instead of Node's bundle for https (a private CA's endpoints; tests). */
  ca?: string | Buffer;
}

export type GuardedFetch = typeof fetch;

const systemResolve: ResolveAll = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** One checked hop: where to connect and what to send. */
interface Hop {
  url: URL;
  /** The host as the socket and TLS see it (IPv6 without brackets). */
  host: string;
  addresses: { address: string; family: number }[];
}

interface RawResponse {
  status: number;
  statusText: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer | null;
}

/**
 * Builds the guarded client. The function it returns takes what fetch takes (a URL or a Request, and `init`):
 * method, headers, body (string, bytes or URLSearchParams; a Request's body is read first), signal (aborting
 * rejects with the signal's reason, as fetch does), redirect ('follow' by default within maxRedirects, 'manual'
 * returns the 3xx as it is, 'error' fails).
 */
export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch {
  const maxRedirects = options.maxRedirects ?? GUARDED_FETCH_DEFAULTS.maxRedirects;
  const maxBytes = options.maxResponseBytes ?? GUARDED_FETCH_DEFAULTS.maxResponseBytes;
  const timeoutMs = options.timeoutMs ?? GUARDED_FETCH_DEFAULTS.timeoutMs;
  const resolve = options.resolve ?? systemResolve;
  const allowed = options.allowPrivate
    ? () => true
    : (options.isAllowedAddress ?? ((a: string) => addressClass(a) === null));

  async function checkedHop(url: URL, signal: AbortSignal): Promise<Hop> {
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new GuardedFetchError('invalid_url', 'endpoint URL must be http or https');
    if (url.username || url.password)
      throw new GuardedFetchError('invalid_url', 'endpoint URL must not contain credentials');
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let addresses: { address: string; family: number }[];
    const family = isIP(host);
    if (family) {
      addresses = [{ address: host, family }];
    } else {
      try {
        addresses = await untilAborted(resolve(host), signal);
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        throw new GuardedFetchError('unresolvable', `endpoint host cannot be resolved: ${host}`, { cause: err });
      }
      if (addresses.length === 0)
        throw new GuardedFetchError('unresolvable', `endpoint host cannot be resolved: ${host}`);
    }
    // Every address must pass: the socket may fall back from one to the next.
    const refused = addresses.find((a) => !allowed(a.address));
    if (refused)
      throw new GuardedFetchError('address_not_allowed', `endpoint address is not allowed: ${refused.address}`);
    return { url, host, addresses };
  }

  return async function guardedFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
    if (input instanceof Request) init = await requestInit(input, init);
    const callerSignal = init.signal ?? undefined;
    callerSignal?.throwIfAborted();
    const exchange = new AbortController();
    const deadline = setTimeout(
      () => exchange.abort(new GuardedFetchError('timeout', `no response within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onCallerAbort = () => exchange.abort(callerSignal!.reason);
    callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
    try {
      let url: URL;
      try {
        url = new URL(input instanceof Request ? input.url : String(input));
      } catch {
        throw new GuardedFetchError('invalid_url', 'endpoint URL is not a valid URL');
      }
      let method = (init.method ?? 'GET').toUpperCase();
      const headers = new Headers(init.headers);
      if (!headers.has('accept-encoding')) headers.set('accept-encoding', 'identity');
      let body = requestBody(init.body);
      for (let redirects = 0; ; redirects++) {
        const hop = await checkedHop(url, exchange.signal);
        const res = await send(hop, { method, headers, body, signal: exchange.signal, maxBytes, ca: options.ca });
        const location = res.headers.location;
        if (!REDIRECT_STATUSES.has(res.status) || location === undefined || init.redirect === 'manual')
          return toResponse(res);
        if (init.redirect === 'error' || maxRedirects === 0) {
          throw new GuardedFetchError(
            'redirect_refused',
            `endpoint answered a redirect (HTTP ${res.status}), which is not followed`,
          );
        }
        if (redirects >= maxRedirects)
          throw new GuardedFetchError('too_many_redirects', `endpoint redirected more than ${maxRedirects} times`);
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new GuardedFetchError('invalid_response', 'endpoint redirected to an invalid URL');
        }
        if (url.protocol === 'https:' && next.protocol !== 'https:') {
          throw new GuardedFetchError('redirect_refused', 'endpoint redirected from https to a URL that is not https');
        }
        // RFC 9110 15.4.2-4: 303 turns the request into a GET, and so do 301 and 302 after a POST (as fetch does).
        if (res.status === 303 ? method !== 'HEAD' : (res.status === 301 || res.status === 302) && method === 'POST') {
          method = 'GET';
          body = null;
          for (const h of BODY_HEADERS) headers.delete(h);
        }
        if (next.origin !== url.origin) for (const h of CROSS_ORIGIN_DROPPED_HEADERS) headers.delete(h);
        url = next;
      }
    } catch (err) {
      // An abort surfaces as the reason it was given: the caller's, or the deadline's GuardedFetchError.
      if (exchange.signal.aborted) throw exchange.signal.reason;
      throw err;
    } finally {
      clearTimeout(deadline);
      callerSignal?.removeEventListener('abort', onCallerAbort);
    }
  };
}

/** `promise`, or the signal's reason once it aborts first (a DNS query cannot be cancelled, only left behind). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** A Request's method, headers, body, signal and redirect mode, each overridden by `init` when given there. */
async function requestInit(request: Request, init: RequestInit): Promise<RequestInit> {
  return {
    method: init.method ?? request.method,
    headers: init.headers ?? request.headers,
    body: init.body !== undefined ? init.body : request.body ? new Uint8Array(await request.arrayBuffer()) : null,
    signal: init.signal ?? request.signal,
    redirect: init.redirect ?? request.redirect,
  };
}

function requestBody(body: RequestInit['body']): Buffer | null {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof URLSearchParams) return Buffer.from(body.toString());
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  // A caller's mistake, as fetch reports one: the callers send JSON text.
  throw new TypeError('the guarded client sends string, byte or URLSearchParams bodies only');
}

/** A node `lookup` that answers only the addresses already checked (no second DNS query). */
function pinnedLookup(addresses: { address: string; family: number }[]): LookupFunction {
  return (_hostname, opts, callback) => {
    const wanted =
      opts.family === 4 || opts.family === 6 ? addresses.filter((a) => a.family === opts.family) : addresses;
    const list = wanted.length > 0 ? wanted : addresses;
    if (opts.all) (callback as (err: null, list: { address: string; family: number }[]) => void)(null, list);
    else callback(null, list[0].address, list[0].family);
  };
}

interface Outgoing {
  method: string;
  headers: Headers;
  body: Buffer | null;
  signal: AbortSignal;
  maxBytes: number;
  ca: string | Buffer | undefined;
}

/** One request on a fresh connection to the checked addresses; the body is read up to `maxBytes`. */
function send(hop: Hop, { method, headers, body, signal, maxBytes, ca }: Outgoing): Promise<RawResponse> {
  const outgoing: Record<string, string> = {};
  headers.forEach((value, name) => (outgoing[name] = value));
  if (body) outgoing['content-length'] = String(body.length);
  const secure = hop.url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const request = (secure ? https : http).request({
      protocol: hop.url.protocol,
      host: hop.host,
      port: hop.url.port || (secure ? 443 : 80),
      path: `${hop.url.pathname}${hop.url.search}`,
      method,
      headers: outgoing,
      // A connection per request: a pooled socket could have been opened for an address checked by another call.
      agent: false,
      lookup: pinnedLookup(hop.addresses),
      // TLS verifies the certificate against the name in the URL, whatever address the socket reached (SNI too).
      ...(secure && !isIP(hop.host) ? { servername: hop.host } : {}),
      ...(secure && ca !== undefined ? { ca } : {}),
    });
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      outcome();
    };
    const fail = (err: unknown) => {
      request.destroy();
      settle(() => reject(err));
    };
    const onAbort = () => fail(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const broken = (what: string) => (err: Error) =>
      fail(new GuardedFetchError('connection_failed', `${what}: ${connectionProblem(err)}`, { cause: err }));
    request.on('error', broken('cannot reach the endpoint'));
    request.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const base = { status, statusText: res.statusMessage ?? '', headers: res.headers };
      if (REDIRECT_STATUSES.has(status) && res.headers.location !== undefined) {
        // The body of a redirect is not needed; the connection is not reused.
        request.destroy();
        return settle(() => resolve({ ...base, body: null }));
      }
      const tooLarge = () =>
        fail(new GuardedFetchError('response_too_large', `endpoint response is larger than ${maxBytes} bytes`));
      if (Number(res.headers['content-length']) > maxBytes) return tooLarge();
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) return tooLarge();
        chunks.push(chunk);
      });
      res.on('end', () => settle(() => resolve({ ...base, body: Buffer.concat(chunks, size) })));
      res.on('error', broken("the endpoint's response broke off"));
      res.on('close', () => {
        if (!res.complete) fail(new GuardedFetchError('connection_failed', "the endpoint's response broke off"));
      });
    });
    request.end(body ?? undefined);
  });
}

/** A connection error's code (ECONNREFUSED, ...) or message, for the recorded error text. */
function connectionProblem(err: Error): string {
  return (err as NodeJS.ErrnoException).code ?? err.message;
}

function toResponse(res: RawResponse): Response {
  // The Response constructor accepts 200-599 only (Fetch standard); a 1xx cannot be final here.
  if (res.status < 200 || res.status > 599)
    throw new GuardedFetchError('invalid_response', `endpoint answered an invalid HTTP status ${res.status}`);
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    try {
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    } catch {
      // A header value fetch's Headers refuses is left out; the body and status are what callers read.
    }
  }
  const body = NULL_BODY_STATUSES.has(res.status) || res.body === null ? null : res.body;
  return new Response(body, { status: res.status, statusText: res.statusText, headers });
}
