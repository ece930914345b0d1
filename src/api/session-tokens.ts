// POST /v1/auth/session_token (spec endpoint 1): short-lived tokens for client-side use; API keys only (403).
import { requireApiKey } from '../auth/hook.js';
import { hashSecret, newSessionTokenSecret } from '../auth/secrets.js';
import { newId } from '../store/ids.js';
import { createSessionTokenBody, sessionTokenBody } from '../schemas/session-tokens.js';
import type { RoutePlugin } from './routes.js';

export const sessionTokenRoutes: RoutePlugin = async (app, { sql, now }) => {
  app.post(
    '/v1/auth/session_token',
    {
      // Reached by session tokens so that they get the spec's own 403 (only API keys may create session tokens).
      config: { allowSessionToken: true },
      schema: {
        tags: ['auth'],
        // The body is optional: every field has a default.
        body: createSessionTokenBody.nullish(),
        response: { 200: sessionTokenBody },
      },
    },
    async (req) => {
      requireApiKey(req.auth, 'create session tokens');
      const body = req.body ?? createSessionTokenBody.parse({});
      const secret = newSessionTokenSecret();
      const expiresAt = new Date(now().getTime() + body.ttl_seconds * 1000);
      await sql`insert into session_tokens (id, org_id, api_key_id, token_hash, conversation_ids, expires_at)
                values (${newId('session_token')}, ${req.auth.orgId}, ${req.auth.apiKeyId}, ${hashSecret(secret)},
                        ${body.conversation_ids ? sql.json(body.conversation_ids) : null}, ${expiresAt})`;
      // Expired tokens of the workspace are of no use to anyone: clear them as new ones are made.
      await sql`delete from session_tokens where org_id = ${req.auth.orgId} and expires_at < ${now()}`;
      return { session_token: secret, expires_at: expiresAt.toISOString() };
    },
  );
};
