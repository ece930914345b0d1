// Session tokens: short-lived secrets an API key mints for client-side use (the STS socket, live reads), optionally
// restricted to some conversations.
import { hashSecret, newSessionTokenSecret } from '../auth/secrets.js';
import { deleteExpiredSessionTokens, insertSessionToken } from '../store/session-tokens.js';
import type { DomainContext } from './context.js';

/**
 * A new token of the workspace minted by the API key `apiKeyId`, valid `ttlSeconds` from now: its secret (shown this
 * once) and end of validity. The workspace's expired tokens are cleared as new ones are made.
 */
export async function createSessionToken(
  ctx: DomainContext,
  orgId: string,
  apiKeyId: string,
  opts: { ttlSeconds: number; conversationIds: string[] | null },
): Promise<{ secret: string; expiresAt: Date }> {
  const secret = newSessionTokenSecret();
  const expiresAt = new Date(ctx.now().getTime() + opts.ttlSeconds * 1000);
  await insertSessionToken(ctx.sql, {
    orgId,
    apiKeyId,
    tokenHash: hashSecret(secret),
    conversationIds: opts.conversationIds,
    expiresAt,
  });
  await deleteExpiredSessionTokens(ctx.sql, orgId, ctx.now());
  return { secret, expiresAt };
}
