// Digest client for a UA (RFC 3261 22.2/22.3, RFC 8760): answers 401 WWW-Authenticate and 407
// Proxy-Authenticate challenges, keeps each realm's nonce to authorize later requests with an
// incremented nonce-count (RFC 7616 3.4), and follows stale=true without counting it as a failure.

import { randomBytes } from 'node:crypto';
import {
  DIGEST_ALGORITHMS,
  QOP_AUTH,
  computeResponse,
  formatCredentials,
  formatNonceCount,
  hashOf,
  parseChallenge,
  type DigestChallenge,
} from './digest.js';

export interface DigestUser {
  username: string;
  password: string;
  /** Answer only this realm (a trunk's); any realm when absent. */
  realm?: string;
}

export interface AuthorizationHeader {
  /** RFC 3261 22.2: Authorization answers 401, Proxy-Authorization answers 407. */
  name: 'Authorization' | 'Proxy-Authorization';
  value: string;
}

export interface DigestAnswer extends AuthorizationHeader {
  /** The challenge said the old nonce was stale: retrying does not mean the password was wrong. */
  stale: boolean;
}

interface RealmState {
  challenge: DigestChallenge;
  proxy: boolean;
  nc: number;
}

const CNONCE_BYTES = 12;

export class DigestClient {
  readonly #user: DigestUser;
  readonly #realms = new Map<string, RealmState>();
  readonly #cnonce: () => string;

  constructor(user: DigestUser, opts: { cnonce?: () => string } = {}) {
    this.#user = user;
    this.#cnonce = opts.cnonce ?? (() => randomBytes(CNONCE_BYTES).toString('base64url'));
  }

  /**
   * Credentials answering a 401 or 407. Null when no challenge is one we can answer, or when the
   * server challenged the very nonce we already answered without stale=true (wrong credentials).
   */
  respond(status: 401 | 407, challengeValues: readonly string[], method: string, uri: string): DigestAnswer | null {
    const proxy = status === 407;
    const offered: DigestChallenge[] = [];
    for (const v of challengeValues) {
      const c = parseChallenge(v);
      if (c && (this.#user.realm === undefined || c.realm === this.#user.realm)) offered.push(c);
    }
    // RFC 8760 2.4: several challenges, one per algorithm; use the strongest we support.
    offered.sort((a, b) => DIGEST_ALGORITHMS.indexOf(a.algorithm) - DIGEST_ALGORITHMS.indexOf(b.algorithm));
    const challenge = offered[0];
    if (!challenge) return null;
    const previous = this.#realms.get(challenge.realm);
    if (previous && previous.challenge.nonce === challenge.nonce && !challenge.stale) return null;
    const state: RealmState = { challenge, proxy, nc: 0 };
    this.#realms.set(challenge.realm, state);
    return { ...this.#authorize(state, method, uri), stale: challenge.stale };
  }

  /** Credentials for a new request, reusing each known nonce with the next nonce-count (RFC 7616 3.4). */
  authorize(method: string, uri: string): AuthorizationHeader[] {
    const out: AuthorizationHeader[] = [];
    for (const state of this.#realms.values()) out.push(this.#authorize(state, method, uri));
    return out;
  }

  /** Forget a realm's nonce (the server rejected a reused one). */
  forget(realm: string): void {
    this.#realms.delete(realm);
  }

  #authorize(state: RealmState, method: string, uri: string): AuthorizationHeader {
    const { challenge } = state;
    // RFC 7616 3.4: with qop, each request carries a fresh cnonce and the next nc for this nonce.
    const qop = challenge.qop.includes(QOP_AUTH) ? QOP_AUTH : null;
    const needsCnonce = qop !== null || challenge.algorithm.endsWith('-sess');
    const cnonce = needsCnonce ? this.#cnonce() : null;
    state.nc += 1;
    const nc = qop !== null ? formatNonceCount(state.nc) : null;
    const ha1Base = hashOf(challenge.algorithm, `${this.#user.username}:${challenge.realm}:${this.#user.password}`);
    const response = computeResponse({
      algorithm: challenge.algorithm,
      ha1Base,
      nonce: challenge.nonce,
      method,
      uri,
      qop,
      nc,
      cnonce,
    });
    return {
      name: state.proxy ? 'Proxy-Authorization' : 'Authorization',
      value: formatCredentials({
        username: this.#user.username,
        realm: challenge.realm,
        nonce: challenge.nonce,
        uri,
        response,
        algorithm: challenge.algorithm,
        cnonce,
        opaque: challenge.opaque,
        qop,
        nc,
      }),
    };
  }
}
