// Probes and metrics outside /v1, without the API's credentials (docs/operations.md): GET /healthz (the process
// runs: always 200 while it can answer), GET /readyz (200 when the node serves: every listener accepting, not
// draining, the database reachable; 503 naming what is not), and GET /metrics when the node serves its metrics here
// (PARLEY_METRICS_TOKEN set, no separate metrics listener): the bearer token is required.
import { metricsExposed } from '../config.js';
import { bearerMatches, METRICS_PATH } from '../metrics/http.js';
import { nodeMetrics } from '../metrics/node.js';
import { pingDatabase } from '../store/db.js';
import type { AppContext } from './context.js';
import type { RoutePlugin } from './types.js';

/** How long /readyz waits for the database before calling it unreachable. */
export const READINESS_DATABASE_TIMEOUT_MS = 2_000;

type Check = 'listeners' | 'drain' | 'database';

export interface ReadinessReport {
  status: 'ready' | 'not_ready';
  checks: { listeners: 'ok' | 'starting'; drain: 'ok' | 'draining'; database: 'ok' | 'unreachable' };
  /** The checks that failed. */
  not_ready: Check[];
}

async function databaseReachable(ctx: AppContext): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), READINESS_DATABASE_TIMEOUT_MS)));
  try {
    return await Promise.race([
      pingDatabase(ctx.sql).then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export async function readinessReport(ctx: AppContext): Promise<ReadinessReport> {
  const state = ctx.readiness.state;
  const checks: ReadinessReport['checks'] = {
    listeners: state === 'starting' ? 'starting' : 'ok',
    drain: ctx.readiness.draining ? 'draining' : 'ok',
    database: (await databaseReachable(ctx)) ? 'ok' : 'unreachable',
  };
  const failing = (Object.keys(checks) as Check[]).filter((k) => checks[k] !== 'ok');
  return { status: failing.length === 0 ? 'ready' : 'not_ready', checks, not_ready: failing };
}

export const healthRoutes: RoutePlugin = async (app, ctx) => {
  app.get('/healthz', { schema: { hide: true } }, async (_req, reply) =>
    reply.header('cache-control', 'no-store').send({ status: 'ok' }),
  );
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const report = await readinessReport(ctx);
    return reply
      .code(report.status === 'ready' ? 200 : 503)
      .header('cache-control', 'no-store')
      .send(report);
  });
  const token = ctx.settings.PARLEY_METRICS_TOKEN;
  // Off unless a token protects it here; with a separate metrics listener it is served there only.
  if (!metricsExposed(ctx.settings) || ctx.settings.PARLEY_METRICS_PORT !== undefined || token === undefined) return;
  app.get(METRICS_PATH, { schema: { hide: true } }, async (req, reply) => {
    if (!bearerMatches(req.headers.authorization, token)) {
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer')
        .send({ error: { message: 'a valid metrics token is required', code: 'unauthorized' } });
    }
    const { contentType, body } = await nodeMetrics.scrape();
    return reply.header('content-type', contentType).header('cache-control', 'no-store').send(body);
  });
};
