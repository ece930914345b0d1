// POST /v1/auth/session_token: short-lived tokens for client-side use; API keys only (403 for session tokens).
import { createSessionToken } from '../domain/session-tokens.js';
import { createSessionTokenBody, sessionTokenBody } from '../schemas/session-tokens.js';
import { requireApiKey } from './auth-hook.js';
import type { RoutePlugin } from './types.js';

export const sessionTokenRoutes: RoutePlugin = async (app, ctx) => {
  app.post(
    '/auth/session_token',
    {
      // Reached by session tokens so that they get this route's own 403 (only API keys may create session tokens).
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
      const token = await createSessionToken(ctx, req.auth.orgId, req.auth.apiKeyId, {
        ttlSeconds: body.ttl_seconds,
        conversationIds: body.conversation_ids ?? null,
      });
      return { session_token: token.secret, expires_at: token.expiresAt.toISOString() };
    },
  );
};
