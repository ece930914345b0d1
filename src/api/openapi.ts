// GET /v1/openapi.json: OpenAPI 3.1 generated from the routes' zod schemas (@fastify/swagger + the type
// provider's transforms). The generator is registered before the routes so it sees every one of them.
import swagger from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { AppContext } from './context.js';
import { API_PREFIX, type ApiApp, type RoutePlugin } from './types.js';

const basicError = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { message: { type: 'string' }, code: { type: 'string' } },
      required: ['message'],
    },
  },
  required: ['error'],
};
const validationError = {
  type: 'object',
  properties: {
    error: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
    param_errors: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'parameter path (a.b.0) -> message',
    },
  },
  required: ['error', 'param_errors'],
};
/** The two error bodies, as documented answers of every /v1 route. */
const ERROR_RESPONSES = {
  400: { description: 'invalid parameters (validation body)', ...validationError },
  401: { description: 'authentication missing, invalid or unsupported', ...basicError },
  403: { description: 'another organization, or not allowed for these credentials', ...basicError },
  404: { description: 'not found', ...basicError },
  409: {
    description: 'conflict (a name conflict on external storage policies has the validation body)',
    ...basicError,
  },
  500: { description: 'internal error', ...basicError },
};

export function registerOpenApi(app: ApiApp, ctx: AppContext): void {
  app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Parley voice agent API',
        version: '1',
        description: 'Projects, agents, tools, phone numbers, conversations and workspace settings of a Parley node.',
      },
      servers: [{ url: ctx.settings.PARLEY_PUBLIC_URL ?? '/' }],
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key or session token' } },
      },
      security: [{ bearer: [] }],
    },
    transform: (route) => {
      const out = jsonSchemaTransform(route);
      const schema = out.schema as { response?: Record<string, unknown>; hide?: boolean };
      // Document the error bodies beside each route's own answers (not used for serialization).
      if (!schema.hide && route.url.startsWith(`${API_PREFIX}/`))
        schema.response = { ...schema.response, ...ERROR_RESPONSES };
      return out;
    },
    transformObject: jsonSchemaTransformObject,
  });
}

/** The document itself, in the `/v1` scope; public, and hidden from itself. */
export const openApiRoutes: RoutePlugin = async (app) => {
  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
};
