// Digest server (RFC 3261 22.1/22.4, RFC 8760, RFC 7616 3.3/5.4-5.5): challenges inbound requests,
// verifies credentials, expires nonces (answered with stale=true) and refuses replayed nonce-counts.
// Nonces are self-validating (time + HMAC), so a nonce survives no restart but needs no table;
// only the highest nc seen per live nonce is kept, and pruned as nonces expire.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  QOP_AUTH,
  computeResponse,
  formatChallenge,
  hashOf,
  parseCredentials,
  DigestFormatError,
  type DigestAlgorithm,
  type DigestCredentials,
} from './digest.js';

export const DEFAULT_NONCE_TTL_MS = 300_000; // RFC 7616 5.5: a nonce lives minutes, not hours
const NONCE_MAC_BYTES = 16;
const NONCE_TIME_BYTES = 8;

/** H(username:realm:password) for the algorithm, or the password itself; null for an unknown user. */
export type PasswordLookup = (
  username: string,
  realm: string,
) => { password: string } | { ha1: Partial<Record<'MD5' | 'SHA-256', string>> } | null;

export interface DigestServerOptions {
  realm: string;
  lookup: PasswordLookup;
  /** Offered in this order, strongest first (RFC 8760 2.4). */
  algorithms?: readonly DigestAlgorithm[];
  nonceTtlMs?: number;
  now?: () => number;
  secret?: Buffer;
}

export type VerifyResult =
  | { ok: true; username: string }
  | {
      ok: false;
      reason: 'missing' | 'malformed' | 'unknown_user' | 'bad_response' | 'stale' | 'replay' | 'foreign_nonce';
      challenges: string[];
    };

export class DigestServer {
  readonly realm: string;
  readonly #lookup: PasswordLookup;
  readonly #algorithms: readonly DigestAlgorithm[];
  readonly #ttl: number;
  readonly #now: () => number;
  readonly #secret: Buffer;
  /** Highest nonce-count seen per nonce, with the nonce's expiry (RFC 7616 5.5 replay protection). */
  readonly #seen = new Map<string, { nc: number; expires: number }>();

  constructor(opts: DigestServerOptions) {
    this.realm = opts.realm;
    this.#lookup = opts.lookup;
    this.#algorithms = opts.algorithms ?? ['SHA-256', 'MD5'];
    this.#ttl = opts.nonceTtlMs ?? DEFAULT_NONCE_TTL_MS;
    this.#now = opts.now ?? Date.now;
    this.#secret = opts.secret ?? randomBytes(32);
  }

  /** WWW-Authenticate (or Proxy-Authenticate) values, one per algorithm, all sharing one fresh nonce. */
  challenges(stale = false): string[] {
    const nonce = this.#newNonce();
    return this.#algorithms.map((algorithm) =>
      formatChallenge({ realm: this.realm, nonce, opaque: null, algorithm, qop: [QOP_AUTH], stale }),
    );
  }

  /** Check the Authorization values of a request whose method and Request-URI are given. */
  verify(method: string, requestUri: string, authorizationValues: readonly string[]): VerifyResult {
    this.#prune();
    let creds: DigestCredentials | null = null;
    try {
      for (const v of authorizationValues) {
        const c = parseCredentials(v);
        if (c && c.realm === this.realm) {
          creds = c;
          break;
        }
      }
    } catch (err) {
      if (!(err instanceof DigestFormatError)) throw err;
      return this.#fail('malformed');
    }
    if (creds === null) return this.#fail('missing');
    if (!this.#algorithms.includes(creds.algorithm)) return this.#fail('malformed');
    const issued = this.#nonceTime(creds.nonce);
    if (issued === null) return this.#fail('foreign_nonce');
    // RFC 3261 22.4 / RFC 7616 3.4: the digest-uri must be the Request-URI it was computed over.
    if (creds.uri !== requestUri) return this.#fail('bad_response');
    const user = this.#lookup(creds.username, this.realm);
    if (user === null) return this.#fail('unknown_user');
    const family = creds.algorithm.startsWith('SHA-256') ? 'SHA-256' : 'MD5';
    const ha1Base =
      'password' in user
        ? hashOf(creds.algorithm, `${creds.username}:${this.realm}:${user.password}`)
        : user.ha1[family];
    if (ha1Base === undefined) return this.#fail('unknown_user');
    const qop = creds.qop === null ? null : creds.qop.toLowerCase();
    if (qop !== null && qop !== QOP_AUTH) return this.#fail('malformed');
    if (qop !== null && (creds.nc === null || creds.cnonce === null || !/^[0-9a-f]{8}$/i.test(creds.nc)))
      return this.#fail('malformed');
    const expected = computeResponse({
      algorithm: creds.algorithm,
      ha1Base,
      nonce: creds.nonce,
      method,
      uri: creds.uri,
      qop,
      nc: creds.nc,
      cnonce: creds.cnonce,
    });
    if (!equalHex(expected, creds.response)) return this.#fail('bad_response');
    // Right credentials: an expired nonce is "stale" (RFC 7616 3.3), so the client retries silently.
    const now = this.#now();
    if (now - issued > this.#ttl) return this.#fail('stale');
    const nc = qop === null ? 0 : parseInt(creds.nc as string, 16);
    const seen = this.#seen.get(creds.nonce);
    // RFC 7616 5.5: a nonce-count not above the last one seen is a replay.
    if (seen && (qop === null || nc <= seen.nc)) return this.#fail('replay');
    this.#seen.set(creds.nonce, { nc, expires: issued + this.#ttl });
    return { ok: true, username: creds.username };
  }

  #fail(reason: Exclude<VerifyResult, { ok: true }>['reason']): VerifyResult {
    return { ok: false, reason, challenges: this.challenges(reason === 'stale') };
  }

  #newNonce(): string {
    const time = Buffer.alloc(NONCE_TIME_BYTES);
    time.writeBigUInt64BE(BigInt(Math.floor(this.#now())));
    const mac = createHmac('sha256', this.#secret).update(time).digest().subarray(0, NONCE_MAC_BYTES);
    return Buffer.concat([time, mac, randomBytes(4)]).toString('base64url');
  }

  /** The issue time of a nonce this server made, or null for one it did not. */
  #nonceTime(nonce: string): number | null {
    const raw = Buffer.from(nonce, 'base64url');
    if (raw.length !== NONCE_TIME_BYTES + NONCE_MAC_BYTES + 4) return null;
    const time = raw.subarray(0, NONCE_TIME_BYTES);
    const mac = createHmac('sha256', this.#secret).update(time).digest().subarray(0, NONCE_MAC_BYTES);
    if (!timingSafeEqual(mac, raw.subarray(NONCE_TIME_BYTES, NONCE_TIME_BYTES + NONCE_MAC_BYTES))) return null;
    return Number(time.readBigUInt64BE());
  }

  #prune(): void {
    const now = this.#now();
    for (const [nonce, s] of this.#seen) if (s.expires < now) this.#seen.delete(nonce);
  }
}

function equalHex(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  return timingSafeEqual(Buffer.from(a), Buffer.from(b));
}
