// The Fastify control plane: zod type provider, error mapping, authentication, then every route plugin.
import Fastify, { LogController } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { installAuth } from '../auth/hook.js';
import type { AppContext } from './context.js';
import { installErrorHandler } from './errors.js';
import { registerOpenApi } from './openapi.js';
import { routePlugins, type ApiApp } from './routes.js';

/** Largest accepted request body (agent configurations with long prompts and tool schemas fit easily). */
const BODY_LIMIT_BYTES = 2 * 1024 * 1024;

export function buildApp(ctx: AppContext): ApiApp {
  const app: ApiApp = Fastify({
    loggerInstance: ctx.log.child({ module: 'api' }),
    // Per-request info logs cost more than the requests themselves; errors are logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
  }).withTypeProvider<ZodTypeProvider>() as unknown as ApiApp; // pino's Logger type vs FastifyBaseLogger
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandler(app);
  installAuth(app, ctx);
  registerOpenApi(app, ctx);
  for (const plugin of routePlugins) {
    app.register(async (scope) => plugin(scope, ctx));
  }
  return app;
}
