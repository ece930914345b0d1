// Shared by the tests of the delivery jobs (webhooks, external storage, redaction): a JobContext on a test
// server's database, and a recording HTTP receiver on 127.0.0.1.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Settings } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import type { Sql } from '../../src/store/db.js';
import type { JobContext } from '../../src/jobs/handler.js';

/** A JobContext whose fetch may reach loopback (the guarded client of production refuses it). */
export function jobContext(sql: Sql, settings: Settings, over: Partial<JobContext> = {}): JobContext {
  return {
    sql,
    settings,
    log: createLogger('silent'),
    now: () => new Date(),
    fetch,
    modelFetch: fetch,
    signal: new AbortController().signal,
    ...over,
  };
}

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the receiver answers to one request: a status (and body), or nothing at all (the client times out). */
export type ReceiverStep = { status: number; body?: string } | { hang: true };

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  /** Answers to the next requests, in order; 200 once they run out. */
  script(...steps: ReceiverStep[]): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const steps: ReceiverStep[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const step = steps.shift() ?? { status: 200 };
      if ('hang' in step) return;
      res.writeHead(step.status, { 'content-type': 'text/plain' });
      res.end(step.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    script: (...s) => void steps.push(...s),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
