// Token buckets kept in PostgreSQL (`rate_limit_buckets`) so every node shares them. One statement takes a token
// atomically: concurrent requests on any node serialise on the bucket's row.
import type { Sql } from './db.js';

export interface BucketRule {
  /** Tokens added per minute. */
  perMinute: number;
  /** Bucket size: requests allowed at once after a quiet period. */
  burst: number;
}

export type Take = { allowed: true } | { allowed: false; retryAfterSec: number };

/** Takes one token of bucket `key`; refill is computed from the database clock, shared by every node. */
export async function takeToken(sql: Sql, key: string, rule: BucketRule): Promise<Take> {
  const perSec = rule.perMinute / 60;
  const [taken] = await sql<{ tokens: number }[]>`
    insert into rate_limit_buckets as b (key, tokens, updated_at)
    values (${key}, ${rule.burst - 1}, now())
    on conflict (key) do update set
      tokens = least(${rule.burst}::float8,
                     b.tokens + greatest(0, extract(epoch from now() - b.updated_at))::float8 * ${perSec}::float8) - 1,
      updated_at = now()
    where least(${rule.burst}::float8,
                b.tokens + greatest(0, extract(epoch from now() - b.updated_at))::float8 * ${perSec}::float8) >= 1
    returning tokens`;
  if (taken) return { allowed: true };
  const [row] = await sql<{ wait: number }[]>`
    select ceil(greatest(1 - least(${rule.burst}::float8,
                  tokens + greatest(0, extract(epoch from now() - updated_at))::float8 * ${perSec}::float8), 0)
                / ${perSec}::float8)::int as wait
    from rate_limit_buckets where key = ${key}`;
  return { allowed: false, retryAfterSec: Math.max(1, row?.wait ?? 1) };
}
