// Authentication of the `/v1` scope: every route not marked public needs `Authorization: Bearer` (an API key or a
// session token), and the workspace ip_allowlist is enforced once set. The credential logic (hashing, lookup,
// allowlists, client addresses) is src/auth's; this file is its HTTP side.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { clientAddress, parseTrustedProxies } from '../auth/addresses.js';
import { AllowlistCache, bearerSecret, type Auth } from '../auth/authenticate.js';
import type { AppContext } from './context.js';
import { ApiError, errorBody, forbidden, unauthorized } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on every authenticated route. */
    auth: Auth;
    /** The client's address (behind trusted proxies: from X-Forwarded-For). */
    clientIp: string;
  }
  interface FastifyContextConfig {
    /** A /v1 route anyone may call (the OpenAPI document, signed links). */
    public?: boolean;
    /** A /v1 route a session token may call (live reads); every other route answers 403 to session tokens. */
    allowSessionToken?: boolean;
  }
}

/** Adds the hook to `scope` (the `/v1` scope): it runs for its routes and its unknown paths. */
export function installAuth(scope: FastifyInstance, ctx: AppContext): void {
  const trusted = parseTrustedProxies(ctx.settings.PARLEY_TRUSTED_PROXIES);
  const allowlists = new AllowlistCache();
  scope.decorateRequest('auth');
  scope.decorateRequest('clientIp', '');

  scope.addHook('onRequest', async (request: FastifyRequest, reply) => {
    const xff = request.headers['x-forwarded-for'];
    request.clientIp = clientAddress(
      request.socket.remoteAddress ?? '',
      Array.isArray(xff) ? xff.join(',') : xff,
      trusted,
    );
    if (request.routeOptions.config.public) return;
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

/** Routes that API keys only may call: 403 for session tokens. */
export function requireApiKey(auth: Auth, action: string): asserts auth is Extract<Auth, { kind: 'api_key' }> {
  if (auth.kind !== 'api_key') throw forbidden(`only API keys can ${action}`);
}

/**
 * The phone-number endpoints answer 401 to an unsupported authentication method: session tokens are let through the
 * hook (allowSessionToken) to be answered 401 here rather than the hook's 403.
 */
export function requireApiKeyOr401(auth: Auth, what: string): asserts auth is Extract<Auth, { kind: 'api_key' }> {
  if (auth.kind !== 'api_key') throw unauthorized(`${what} accept API keys only`);
}
