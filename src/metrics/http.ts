// Serving /metrics (docs/operations.md, "Metrics"): the bearer token check shared by the control plane's route and
// the separate metrics listener (PARLEY_METRICS_HOST/PORT), which serves that one path and nothing else.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { NodeMetrics } from './node.js';

export const METRICS_PATH = '/metrics';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Whether an Authorization header carries `Bearer <token>` (compared in constant time). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m !== null && timingSafeEqual(digest(m[1]), digest(token));
}

export interface MetricsListener {
  readonly port: number;
  close(): Promise<void>;
}

/** A listener for `/metrics` only: 401 without the token when one is set, 404 for any other path. */
export function listenForMetrics(
  metrics: NodeMetrics,
  opts: { host: string; port: number; token: string | undefined },
): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== METRICS_PATH || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (opts.token !== undefined && !bearerMatches(req.headers.authorization, opts.token)) {
      res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' }).end('unauthorized\n');
      return;
    }
    metrics.scrape().then(
      ({ contentType, body }) =>
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(body),
      (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${err.message}\n`),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve({
        port: (server.address() as { port: number }).port,
        close: () =>
          new Promise((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    });
  });
}
