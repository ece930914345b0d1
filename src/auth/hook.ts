// The control plane's authentication: every /v1 route not marked public needs `Authorization: Bearer`
// (an API key or a session token); the workspace ip_allowlist is enforced once set (spec, "Authentication").
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, errorBody, forbidden, unauthorized } from '../api/errors.js';
import type { AppContext } from '../api/context.js';
import { clientAddress, parseTrustedProxies } from './addresses.js';
import { AllowlistCache, bearerSecret, type Auth } from './authenticate.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on every authenticated route. */
    auth: Auth;
    /** The client's address (behind trusted proxies: from X-Forwarded-For). */
    clientIp: string;
  }
  interface FastifyContextConfig {
    /** A /v1 route anyone may call (the OpenAPI document). */
    public?: boolean;
    /** A /v1 route a session token may call (live reads); every other route answers 403 to session tokens. */
    allowSessionToken?: boolean;
  }
}

export function installAuth(app: FastifyInstance, ctx: AppContext): void {
  const trusted = parseTrustedProxies(ctx.settings.PARLEY_TRUSTED_PROXIES);
  const allowlists = new AllowlistCache();
  app.decorateRequest('auth');
  app.decorateRequest('clientIp', '');

  app.addHook('onRequest', async (request: FastifyRequest, reply) => {
    const xff = request.headers['x-forwarded-for'];
    request.clientIp = clientAddress(request.socket.remoteAddress ?? '', Array.isArray(xff) ? xff.join(',') : xff, trusted);
    if (!request.url.startsWith('/v1/') || request.routeOptions.config.public) return;
    try {
      const secret = bearerSecret(request.headers.authorization);
      if (!secret) throw unauthorized('missing credentials: send Authorization: Bearer <API key>');
      const credential = await ctx.credentials.lookup(secret, ctx.now());
      if (!credential) throw unauthorized('invalid or expired credentials');
      if (!allowlists.allows(credential.ipAllowlist, request.clientIp)) {
        throw forbidden(`address ${request.clientIp} is not in the workspace ip_allowlist`, 'ip_not_allowed');
      }
      if (credential.auth.kind === 'session_token' && !request.routeOptions.config.allowSessionToken) {
        throw forbidden('session tokens cannot call this endpoint: use an API key', 'api_key_required');
      }
      request.auth = credential.auth;
    } catch (err) {
      if (err instanceof ApiError) return reply.status(err.status).send(errorBody(err));
      throw err;
    }
  });
}

/** Routes that API keys only may call (session tokens get 403). */
export function requireApiKey(auth: Auth, action: string): asserts auth is Extract<Auth, { kind: 'api_key' }> {
  if (auth.kind !== 'api_key') throw forbidden(`only API keys can ${action}`);
}
