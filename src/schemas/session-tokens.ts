// Session tokens: the request and answer of POST /v1/auth/session_token, and their lifetime bounds.
import { z } from 'zod';

/** Default lifetime 300 s; at most one day. */
export const SESSION_TOKEN_DEFAULT_TTL_SECONDS = 300;
export const SESSION_TOKEN_MAX_TTL_SECONDS = 86_400;
/** Conversations one token may be scoped to (Parley's bound). */
export const SESSION_TOKEN_MAX_CONVERSATIONS = 100;

export const createSessionTokenBody = z
  .object({
    ttl_seconds: z.number().int().min(1).max(SESSION_TOKEN_MAX_TTL_SECONDS).default(SESSION_TOKEN_DEFAULT_TTL_SECONDS),
    conversation_ids: z.array(z.string().min(1).max(200)).max(SESSION_TOKEN_MAX_CONVERSATIONS).optional(),
  })
  .strict();

export const sessionTokenBody = z.object({ session_token: z.string(), expires_at: z.string() });
