// The per-workspace rate limit of POST /v1/responses: a token bucket per workspace, kept in the database so every
// node shares it (store/rate-limits.ts).
import type { Settings } from '../config.js';
import type { Sql } from '../store/db.js';
import { takeToken, type Take } from '../store/rate-limits.js';

/** Bucket key of a workspace in `rate_limit_buckets`. */
const bucketKey = (orgId: string) => `responses:${orgId}`;

/** Takes one request of the workspace's allowance (PARLEY_RESPONSES_RATE_PER_MIN, bursts of PARLEY_RESPONSES_RATE_BURST). */
export function takeResponsesToken(
  sql: Sql,
  orgId: string,
  settings: Pick<Settings, 'PARLEY_RESPONSES_RATE_PER_MIN' | 'PARLEY_RESPONSES_RATE_BURST'>,
): Promise<Take> {
  return takeToken(sql, bucketKey(orgId), {
    perMinute: settings.PARLEY_RESPONSES_RATE_PER_MIN,
    burst: settings.PARLEY_RESPONSES_RATE_BURST,
  });
}
