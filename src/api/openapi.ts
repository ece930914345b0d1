// GET /v1/openapi.json: OpenAPI 3.1 generated from the routes' zod schemas (@fastify/swagger + the type
// provider's transforms). Registered before the routes so it sees every one of them.
import swagger from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { AppContext } from './context.js';
import { registerDocs } from './docs.js';
import type { ApiApp } from './routes.js';

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
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  app.register(async (scope) => {
    scope.get('/v1/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => scope.swagger());
    registerDocs(scope);
  });
}
