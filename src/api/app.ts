// The Fastify control plane: zod type provider, error mapping, the OpenAPI generator, then the `/v1` scope (the
// auth hook and every API route) and the few routes outside it.
import Fastify, { LogController } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { installAuth } from './auth-hook.js';
import type { AppContext } from './context.js';
import { jsonProblem } from '../schemas/safe-json.js';
import { metricsExposed } from '../config.js';
import { nodeMetrics } from '../metrics/node.js';
import { answerClientError, answerFrameworkError, ApiError, installErrorHandler, routeNotFound } from './errors.js';
import { registerOpenApi } from './openapi.js';
import { serializerCompiler } from './serializer.js';
import { rootRoutePlugins, v1RoutePlugins } from './routes.js';
import { API_PREFIX, type ApiApp } from './types.js';

/** Largest accepted request body (agent configurations with long prompts and tool schemas fit easily). */
const BODY_LIMIT_BYTES = 2 * 1024 * 1024;

export function buildApp(ctx: AppContext): ApiApp {
  const app: ApiApp = Fastify({
    loggerInstance: ctx.log.child({ module: 'api' }),
    // Per-request info logs cost more than the requests themselves; errors are logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
  }).withTypeProvider<ZodTypeProvider>() as unknown as ApiApp; // pino's Logger type vs FastifyBaseLogger
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandler(app);
  refuseUnsafeInput(app);
  if (metricsExposed(ctx.settings)) measureRequests(app);
  app.setNotFoundHandler(routeNotFound);
  // Before the routes, so that it sees every one of them.
  registerOpenApi(app, ctx);
  app.register(
    async (v1) => {
      installAuth(v1, ctx);
      // Any other path under /v1/ is authenticated like the rest (401 before 404); /v1 itself is no API path.
      v1.all('/*', { schema: { hide: true } }, routeNotFound);
      for (const plugin of v1RoutePlugins) v1.register(async (scope) => plugin(scope, ctx));
    },
    { prefix: API_PREFIX },
  );
  for (const plugin of rootRoutePlugins) app.register(async (scope) => plugin(scope, ctx));
  return app;
}

/** Every answered request's duration by method, route pattern (`unmatched` for none) and status (src/metrics/node.ts). */
function measureRequests(app: ApiApp): void {
  app.addHook('onResponse', async (request, reply) => {
    nodeMetrics.httpRequests.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
}

/**
 * Before any route's schema runs: the body, query and path parameters of every request are checked whole
 * (src/schemas/safe-json.ts), so NUL, an unpaired surrogate (in a value or a key) or nesting past the limit is a
 * 400 naming the field, never a database error or a stack overflow in a recursive schema.
 */
function refuseUnsafeInput(app: ApiApp): void {
  const parts = ['body', 'query', 'params'] as const;
  app.addHook('preValidation', async (request) => {
    for (const part of parts) {
      const problem = jsonProblem(request[part]);
      if (!problem) continue;
      const field = problem.path.length > 0 ? problem.path.join('.') : part === 'query' ? 'querystring' : part;
      throw new ApiError(400, `invalid parameter ${field}: ${problem.message}`, {
        paramErrors: { [field]: problem.message },
      });
    }
  });
}
