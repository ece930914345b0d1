// The control plane's Fastify types (the app with the zod type provider, a route plugin) and the API's prefix.
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppContext } from './context.js';

export type ApiApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/** Registers one resource's routes on `app`, an encapsulated scope (the `/v1` one for API routes). */
export type RoutePlugin = (app: ApiApp, ctx: AppContext) => Promise<void>;

/** The prefix of every API route: the authenticated scope's. */
export const API_PREFIX = '/v1';
