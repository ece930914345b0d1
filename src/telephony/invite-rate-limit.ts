// Inbound INVITE admission per source address: a token bucket each (PARLEY_SIP_INVITE_RATE_PER_SEC refill,
// PARLEY_SIP_INVITE_BURST capacity). Over the rate the SIP service answers 503 with Retry-After
// (RFC 3261 21.5.4), which a trunk honours by backing off or sending the call elsewhere.
//
// Memory is bounded: the table holds at most `maxSources` buckets, least recently used first. A bucket that has
// refilled completely is the same as no bucket, so idle ones are dropped as calls arrive, and when the table is
// full the least recently used one makes room (it loses nothing but its partial emptiness).
import { normalizeAddress } from '../auth/addresses.js';
import type { Settings } from '../config.js';

export const DEFAULT_MAX_SOURCES = 10_000;
/** Idle buckets looked at per check: the sweep's cost stays constant whatever the table's size. */
const SWEEP_PER_CHECK = 2;
const MS_PER_SEC = 1000;

export type InviteAdmission = { allowed: true } | { allowed: false; retryAfterSec: number };

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (clock ms). */
  at: number;
}

export interface InviteRateLimitOptions {
  ratePerSec: number;
  burst: number;
  /** Milliseconds, monotonic; default performance.now. */
  now?: () => number;
  maxSources?: number;
}

export class InviteRateLimit {
  readonly #rate: number;
  readonly #burst: number;
  readonly #now: () => number;
  readonly #max: number;
  /** Source -> bucket, in least-recently-used order (a Map keeps insertion order; a use re-inserts). */
  readonly #buckets = new Map<string, Bucket>();

  constructor(opts: InviteRateLimitOptions) {
    if (!(opts.ratePerSec > 0) || !(opts.burst >= 1))
      throw new RangeError('an INVITE rate limit needs a positive rate and a burst of at least 1');
    this.#rate = opts.ratePerSec;
    this.#burst = opts.burst;
    this.#now = opts.now ?? (() => performance.now());
    this.#max = opts.maxSources ?? DEFAULT_MAX_SOURCES;
  }

  static fromSettings(
    settings: Pick<Settings, 'PARLEY_SIP_INVITE_RATE_PER_SEC' | 'PARLEY_SIP_INVITE_BURST'>,
    now?: () => number,
  ): InviteRateLimit {
    return new InviteRateLimit({
      ratePerSec: settings.PARLEY_SIP_INVITE_RATE_PER_SEC,
      burst: settings.PARLEY_SIP_INVITE_BURST,
      now,
    });
  }

  /** Takes one token from `source`'s bucket, or says how many whole seconds until one is there. */
  check(source: string): InviteAdmission {
    const key = normalizeAddress(source);
    const now = this.#now();
    this.#sweep(now);
    let bucket = this.#buckets.get(key);
    if (bucket) {
      this.#buckets.delete(key);
      bucket.tokens = Math.min(this.#burst, bucket.tokens + ((now - bucket.at) / MS_PER_SEC) * this.#rate);
      bucket.at = now;
    } else {
      if (this.#buckets.size >= this.#max) this.#buckets.delete(this.#buckets.keys().next().value as string);
      bucket = { tokens: this.#burst, at: now };
    }
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    return { allowed: false, retryAfterSec: Math.max(1, Math.ceil((1 - bucket.tokens) / this.#rate)) };
  }

  /** Buckets held now (for tests and metrics). */
  get size(): number {
    return this.#buckets.size;
  }

  /** Drops the least recently used buckets that have refilled completely. */
  #sweep(now: number): void {
    for (let i = 0; i < SWEEP_PER_CHECK; i++) {
      const oldest = this.#buckets.entries().next().value;
      if (!oldest) return;
      const [key, bucket] = oldest;
      if (bucket.tokens + ((now - bucket.at) / MS_PER_SEC) * this.#rate < this.#burst) return;
      this.#buckets.delete(key);
    }
  }
}
