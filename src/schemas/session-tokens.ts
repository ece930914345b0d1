// Session tokens (spec endpoint 1, "Session token" states, "Limits").
import { z } from 'zod';

/** Spec, "Limits": default lifetime 300 s. The upper bound is not given there; one day is ours. */
export const SESSION_TOKEN_DEFAULT_TTL_SECONDS = 300;
export const SESSION_TOKEN_MAX_TTL_SECONDS = 86_400;
/** Conversations one token may be scoped to (ours; the spec gives no bound). */
export const SESSION_TOKEN_MAX_CONVERSATIONS = 100;

export const createSessionTokenBody = z
  .object({
    ttl_seconds: z.number().int().min(1).max(SESSION_TOKEN_MAX_TTL_SECONDS).default(SESSION_TOKEN_DEFAULT_TTL_SECONDS),
    conversation_ids: z.array(z.string().min(1).max(200)).max(SESSION_TOKEN_MAX_CONVERSATIONS).optional(),
  })
  .strict();

export const sessionTokenBody = z.object({ session_token: z.string(), expires_at: z.string() });
