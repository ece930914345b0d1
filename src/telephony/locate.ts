// Locating SIP servers (RFC 3263): a SIP URI -> the ordered list of (transport, address, port) to try, and the
// failover that tries them in order (RFC 3263 4.3).
//
//   const locator = new Locator({ servers: ['127.0.0.1:5353'] });
//   const targets = await locator.locate('sip:carrier.example');          // throws LocateError
//   const dialog = await failover(targets, (target) => ua.createUAC(uri, { proxy: targetUri(target), ... }));
import { Resolver, lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { SipError, TransactionTimeoutError, TransportError } from '../../sip/index.js';
import { isSipUri, parseUri, type SipUri } from '../../sip/message/index.js';

export type LocatedTransport = 'udp' | 'tcp' | 'tls';

/** Where to send a request: an IP address (no brackets), a port, a transport. */
export interface SipTarget {
  transport: LocatedTransport;
  address: string;
  port: number;
}

/** RFC 3263 4.1: the NAPTR services of SIP over UDP, TCP and TLS (RFC 3263 Table 1). */
const NAPTR_SERVICES: Readonly<Record<string, LocatedTransport>> = {
  'SIP+D2U': 'udp',
  'SIP+D2T': 'tcp',
  'SIPS+D2T': 'tls',
};
/** RFC 3263 4.1: the SRV owner name prefixes per transport. */
const SRV_PREFIX: Readonly<Record<LocatedTransport, string>> = {
  udp: '_sip._udp.',
  tcp: '_sip._tcp.',
  tls: '_sips._tcp.',
};
/** RFC 3261 19.1.2: 5060 for sip over UDP and TCP, 5061 over TLS. */
export const DEFAULT_PORTS: Readonly<Record<LocatedTransport, number>> = { udp: 5060, tcp: 5060, tls: 5061 };
/** The client's preference when no NAPTR says otherwise (RFC 3263 4.1: "in order of preference"). */
const TRANSPORT_PREFERENCE: readonly LocatedTransport[] = ['udp', 'tcp', 'tls'];
/** Parley's SIP transports. */
export const PARLEY_TRANSPORTS: readonly LocatedTransport[] = ['udp', 'tcp'];
/** RFC 3403 4.1: flag "S": the next lookup is SRV. */
const NAPTR_FLAG_SRV = 's';
/** RFC 3403 4.1: a replacement of "." means none (the record rewrites by regexp, which SIP does not use). */
const NAPTR_NO_REPLACEMENT = '.';
/** RFC 2782: a target of "." means the service is decidedly not available at this domain. */
const SRV_NO_SERVICE = '.';
/** DNS answers that mean "no such records" (NXDOMAIN, NODATA); every other failure is an error. */
const NOT_FOUND_CODES = new Set(['ENOTFOUND', 'ENODATA']);
const DEFAULT_QUERY_TIMEOUT_MS = 2000;
const DEFAULT_QUERY_TRIES = 2;

/** The URI cannot be resolved to any target (bad URI, no records, a DNS failure). */
export class LocateError extends Error {
  override readonly cause: unknown;

  constructor(message: string, cause?: unknown) {
    super(message);
    this.name = 'LocateError';
    this.cause = cause;
  }
}

export interface LocatorOptions {
  /** DNS servers (`addr`, `addr:port`, `[v6]:port`); unset: the system's, and A/AAAA through getaddrinfo (/etc/hosts). */
  servers?: readonly string[];
  /** Per query attempt, and attempts per query. */
  timeoutMs?: number;
  tries?: number;
  /** Transports this client speaks (RFC 3263 4.1: others' records are discarded); default UDP and TCP. */
  transports?: readonly LocatedTransport[];
  /** Address families in the order their addresses are tried; default IPv4 then IPv6. */
  families?: readonly (4 | 6)[];
  /** Uniform in [0, 1): the weighted SRV selection of RFC 2782. */
  random?: () => number;
}

interface SrvRecord {
  priority: number;
  weight: number;
  port: number;
  name: string;
}

/**
 * RFC 2782 ordering: ascending priority; within a priority, weighted random selection (zero-weight records first
 * in the running sum, so they have a small chance only). `random` is uniform in [0, 1).
 */
export function orderSrv<T extends { priority: number; weight: number }>(
  records: readonly T[],
  random: () => number,
): T[] {
  const byPriority = new Map<number, T[]>();
  for (const r of records) {
    const group = byPriority.get(r.priority);
    if (group) group.push(r);
    else byPriority.set(r.priority, [r]);
  }
  const out: T[] = [];
  for (const priority of [...byPriority.keys()].sort((a, b) => a - b)) {
    const group = byPriority.get(priority) as T[];
    const pool = [...group.filter((r) => r.weight === 0), ...group.filter((r) => r.weight > 0)];
    while (pool.length > 0) {
      const total = pool.reduce((sum, r) => sum + r.weight, 0);
      // "choose a uniform random number between 0 and the sum computed (inclusive)"
      const pick = Math.floor(random() * (total + 1));
      let running = 0;
      let chosen = pool.length - 1;
      for (let i = 0; i < pool.length; i++) {
        running += pool[i].weight;
        if (running >= pick) {
          chosen = i;
          break;
        }
      }
      out.push(pool[chosen]);
      pool.splice(chosen, 1);
    }
  }
  return out;
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function isNotFound(err: unknown): boolean {
  return NOT_FOUND_CODES.has((err as { code?: string }).code ?? '');
}

export class Locator {
  readonly #resolver: Resolver;
  readonly #customServers: boolean;
  readonly #transports: readonly LocatedTransport[];
  readonly #families: readonly (4 | 6)[];
  readonly #random: () => number;

  constructor(opts: LocatorOptions = {}) {
    this.#resolver = new Resolver({
      timeout: opts.timeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS,
      tries: opts.tries ?? DEFAULT_QUERY_TRIES,
    });
    this.#customServers = opts.servers !== undefined;
    if (opts.servers) this.#resolver.setServers([...opts.servers]);
    this.#transports = opts.transports ?? PARLEY_TRANSPORTS;
    this.#families = opts.families ?? [4, 6];
    this.#random = opts.random ?? Math.random;
  }

  /** RFC 3263 4: the targets of `uri` in the order to try them. Throws LocateError when there are none. */
  async locate(uri: string | SipUri): Promise<SipTarget[]> {
    const text = typeof uri === 'string' ? uri : `${uri.scheme}:${uri.host}`;
    let parsed;
    try {
      parsed = typeof uri === 'string' ? parseUri(uri.trim()) : uri;
    } catch (err) {
      throw new LocateError(`cannot locate '${text}': ${(err as Error).message}`, err);
    }
    if (!isSipUri(parsed)) throw new LocateError(`cannot locate '${text}': not a sip: or sips: URI`);
    let targets: SipTarget[];
    try {
      targets = await this.#targets(parsed);
    } catch (err) {
      if (err instanceof LocateError) throw err;
      throw new LocateError(`cannot locate '${text}': ${(err as Error).message}`, err);
    }
    const seen = new Set<string>();
    const unique = targets.filter((t) => {
      const key = `${t.transport} ${t.address} ${t.port}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    if (unique.length === 0) throw new LocateError(`cannot locate '${text}': no SIP server found`);
    return unique;
  }

  async #targets(uri: SipUri): Promise<SipTarget[]> {
    const secure = uri.scheme === 'sips';
    // RFC 3263 4: maddr, when present, names the target host.
    const host = unbracket(uri.params.get('maddr') ?? uri.host);
    const forced = this.#transportParam(uri, secure);
    // RFC 3263 4.1: a numeric host or an explicit port: UDP for sip, TLS for sips, unless the URI says otherwise.
    const plain: LocatedTransport = secure ? 'tls' : this.#transports.includes('udp') ? 'udp' : 'tcp';
    if (isIP(host) !== 0) {
      const transport = forced ?? plain;
      this.#check(transport, uri);
      return [{ transport, address: host, port: uri.port ?? DEFAULT_PORTS[transport] }];
    }
    if (uri.port !== undefined) {
      const transport = forced ?? plain;
      this.#check(transport, uri);
      return this.#addressTargets(host, transport, uri.port);
    }
    if (forced !== null) {
      // RFC 3263 4.2: transport known, no port: SRV for that transport, else A/AAAA on the default port.
      this.#check(forced, uri);
      const viaSrv = await this.#srvTargets(SRV_PREFIX[forced] + host, forced);
      return viaSrv.length > 0 ? viaSrv : this.#addressTargets(host, forced, DEFAULT_PORTS[forced]);
    }
    // RFC 3263 4.1: NAPTR, keeping the services we speak (only SIPS for a sips: URI), by order then preference.
    const naptr = (await this.#query(() => this.#resolver.resolveNaptr(host)))
      .filter(
        (r) =>
          r.flags.toLowerCase() === NAPTR_FLAG_SRV && r.replacement !== '' && r.replacement !== NAPTR_NO_REPLACEMENT,
      )
      .map((r) => ({ ...r, transport: NAPTR_SERVICES[r.service.toUpperCase()] }))
      .filter(
        (r) =>
          r.transport !== undefined && this.#transports.includes(r.transport) && (!secure || r.transport === 'tls'),
      )
      .sort((a, b) => a.order - b.order || a.preference - b.preference);
    if (naptr.length > 0) {
      const out: SipTarget[] = [];
      for (const r of naptr) out.push(...(await this.#srvTargets(r.replacement, r.transport)));
      return out;
    }
    // RFC 3263 4.1: no NAPTR: an SRV query per transport we speak, tried in our order of preference.
    const candidates = secure ? (['tls'] as const) : TRANSPORT_PREFERENCE;
    const out: SipTarget[] = [];
    for (const t of candidates) {
      if (this.#transports.includes(t)) out.push(...(await this.#srvTargets(SRV_PREFIX[t] + host, t)));
    }
    if (out.length > 0) return out;
    // RFC 3263 4.2: no SRV either: A/AAAA on the default port.
    this.#check(plain, uri);
    return this.#addressTargets(host, plain, DEFAULT_PORTS[plain]);
  }

  #transportParam(uri: SipUri, secure: boolean): LocatedTransport | null {
    const param = uri.params.get('transport');
    if (param === undefined || param === null) return null;
    const t = param.toLowerCase();
    // RFC 3261 26.2.2: a sips: URI over TCP means TLS; SIPS over UDP does not exist.
    if (secure) {
      if (t === 'tcp' || t === 'tls') return 'tls';
      throw new LocateError(`cannot locate '${uri.scheme}:${uri.host}': sips: cannot use transport=${param}`);
    }
    if (t === 'udp' || t === 'tcp' || t === 'tls') return t;
    throw new LocateError(`cannot locate 'sip:${uri.host}': unsupported transport=${param}`);
  }

  #check(transport: LocatedTransport, uri: SipUri): void {
    if (!this.#transports.includes(transport)) {
      throw new LocateError(
        `cannot locate '${uri.scheme}:${uri.host}': needs ${transport.toUpperCase()}, which this node does not speak`,
      );
    }
  }

  /** Records of a query; NXDOMAIN and NODATA are none, other failures are thrown. */
  async #query<T>(run: () => Promise<T[]>): Promise<T[]> {
    try {
      return await run();
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  }

  async #srvTargets(name: string, transport: LocatedTransport): Promise<SipTarget[]> {
    const records: SrvRecord[] = await this.#query(() => this.#resolver.resolveSrv(name));
    const usable = records.filter((r) => r.name !== SRV_NO_SERVICE && r.name !== '');
    const out: SipTarget[] = [];
    for (const r of orderSrv(usable, this.#random))
      out.push(...(await this.#addressTargets(r.name, transport, r.port)));
    return out;
  }

  async #addressTargets(host: string, transport: LocatedTransport, port: number): Promise<SipTarget[]> {
    const addresses = await this.#addresses(host);
    return addresses.map((address) => ({ transport, address, port }));
  }

  /** A and AAAA of `host`, in the configured family order. */
  async #addresses(host: string): Promise<string[]> {
    if (isIP(host) !== 0) return [host];
    const byFamily = new Map<4 | 6, string[]>();
    if (this.#customServers) {
      await Promise.all(
        this.#families.map(async (family) => {
          byFamily.set(
            family,
            await this.#query(() => (family === 4 ? this.#resolver.resolve4(host) : this.#resolver.resolve6(host))),
          );
        }),
      );
    } else {
      // The system resolver (getaddrinfo), so names in /etc/hosts resolve as they do for every other client.
      const all = await this.#query(() => lookup(host, { all: true }));
      for (const family of this.#families)
        byFamily.set(
          family,
          all.filter((a) => a.family === family).map((a) => a.address),
        );
    }
    return this.#families.flatMap((f) => byFamily.get(f) ?? []);
  }
}

/** The URI that sends a request to exactly this target (for the UA's `proxy`). */
export function targetUri(target: SipTarget): string {
  const host = isIP(target.address) === 6 ? `[${target.address}]` : target.address;
  if (target.transport === 'tls') return `sips:${host}:${target.port};transport=tcp`;
  return `sip:${host}:${target.port};transport=${target.transport}`;
}

/**
 * RFC 3263 4.3: failures that move a request on to the next target: the transport failed, no response came
 * (Timer B or F), or the server answered 503.
 */
export function isFailoverError(err: unknown): boolean {
  if (err instanceof TransportError || err instanceof TransactionTimeoutError) return true;
  return err instanceof SipError && err.status === 503;
}

export interface FailoverOptions {
  /** Whether a rejection moves on to the next target; default isFailoverError. */
  shouldFailover?: (err: unknown) => boolean;
  /** Aborted: no further target is tried. */
  signal?: AbortSignal;
}

/**
 * Try `attempt` on each target in order until one resolves. A rejection that shouldFailover accepts moves on;
 * any other rejection, or the last target's, is thrown as it came.
 */
export async function failover<T>(
  targets: readonly SipTarget[],
  attempt: (target: SipTarget, index: number) => Promise<T>,
  opts: FailoverOptions = {},
): Promise<T> {
  if (targets.length === 0) throw new LocateError('no targets to try');
  const shouldFailover = opts.shouldFailover ?? isFailoverError;
  for (let i = 0; ; i++) {
    opts.signal?.throwIfAborted();
    try {
      return await attempt(targets[i], i);
    } catch (err) {
      if (i === targets.length - 1 || !shouldFailover(err)) throw err;
    }
  }
}
