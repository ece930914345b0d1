// Entry: config -> store -> migrations -> job queue -> bootstrap -> recovery -> media workers -> SIP -> control plane
// (docs/ARCHITECTURE.md, "Process shape"). The control plane starts listening last, once the realtime port and SIP
// accept: a client that starts a conversation as soon as the API answers is not refused; `parley ready` is logged
// (and nodeReadiness set) when every listener accepts. A media worker that dies has its calls ended by telephony
// (BYE, records finished) and then stops the node.
// SIGTERM (or SIGINT) drains (docs/operations.md, "Drain"): nothing new is admitted and /readyz answers 503 at
// once, live conversations and calls finish on their own for up to PARLEY_DRAIN_TIMEOUT_SEC, then the rest are ended
// and saved and everything closes in reverse order of start; a second signal ends the drain at once.
import { ConfigError, conversationNodeId, loadSettings, metricsExposed, type Settings } from './config.js';
import { createLogger, type Logger } from './log.js';
import { openStore, pingDatabase, type Store } from './store/db.js';
import { StoreError } from './store/errors.js';
import { migrate } from './store/migrate.js';
import { bootstrap } from './store/workspaces.js';
import { createContext } from './api/context.js';
import { buildApp } from './api/app.js';
import { startWorkerPool, type WorkerPool } from './workers/worker-pool.js';
import type { MediaWorkerListener, MediaWorkers } from './telephony/media-workers.js';
import { startSipService } from './telephony/sip-service.js';
import { parseTrustedProxies } from './auth/addresses.js';
import { createNodeJobQueue } from './jobs/handlers.js';
import { createGuardedFetch } from './net/guarded-fetch.js';
import { recoverAtStart } from './domain/recovery.js';
import { leasePolicy } from './store/leases.js';
import { performance } from 'node:perf_hooks';
import { nodeReadiness } from './readiness.js';
import { listenForMetrics, type MetricsListener } from './metrics/http.js';
import { nodeMetrics } from './metrics/node.js';
import { queueDepth } from './store/jobs.js';

/** A started node: what a drain and the shutdown after it need. */
interface RunningNode {
  /** Stops admitting: SIP refuses INVITEs and OPTIONS and new outbound calls, the workers new STS conversations. */
  drain(): void;
  /** Conversations and calls still running (null until every worker reported since drain()). */
  live(): number | null;
  /** Ends what still runs (saved, ended_by error) and closes everything in reverse order of start. */
  close(): Promise<void>;
}

/** How often a drain looks whether anything still runs. */
const DRAIN_POLL_MS = 100;
const MS_PER_SEC = 1000;
/**
 * The exit code of a node stopped by the loss of a media worker (after its orderly drain): a failure, so that a
 * supervisor restarting on failure (systemd `Restart=on-failure`, Docker `on-failure`) restarts it. A stop asked
 * by a signal exits 0.
 */
const EXIT_WORKER_LOST = 1;
/** Set once a media worker died: the stop that follows exits EXIT_WORKER_LOST. */
let workerLost = false;

async function start(settings: Settings, log: Logger): Promise<RunningNode> {
  // Without its database a node can do nothing useful: stop (a supervisor restarts it).
  const store: Store = await openStore(settings, log, { onLost: () => process.exit(1) });
  let node: RunningNode;
  const closers: (() => Promise<void>)[] = [() => store.close()];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close();
  };
  try {
    await migrate(store.sql, log);
    // Post-call work (src/jobs/): runs until shutdown, stopped before the store closes.
    // Jobs call customer URLs (webhooks, buckets) through the guarded client, as conversations do.
    const jobs = createNodeJobQueue({
      sql: store.sql,
      settings,
      log,
      fetch: createGuardedFetch({ allowPrivate: settings.PARLEY_ALLOW_PRIVATE_ENDPOINTS }),
    });
    await jobs.start();
    closers.push(() => jobs.stop());
    const first = await bootstrap(store.sql, settings.PARLEY_BOOTSTRAP_API_KEY);
    // Conversations a previous run of this node left in progress (kill -9, a crash): ended, their recordings
    // repaired and attached, its leases freed; before the media workers run (and resume compressions).
    await recoverAtStart({
      sql: store.sql,
      log,
      dataDir: settings.PARLEY_DATA_DIR,
      nodeId: conversationNodeId(settings),
      leaseNodeId: leasePolicy(settings).nodeId,
    });
    const base = `http://${settings.PARLEY_HOST.includes(':') ? `[${settings.PARLEY_HOST}]` : settings.PARLEY_HOST}`;
    let port = settings.PARLEY_HTTP_PORT;
    const ctx = await createContext(settings, store, log, () => `${base}:${port}`);
    const app = buildApp(ctx);
    closers.push(() => app.close());
    // Media workers (realtime port): closed before the control plane and the store, after conversations are saved.
    // One that dies has its calls ended first (records saved), then the node stops: its STS conversations' leases
    // would otherwise be renewed by this node's heartbeat forever.
    let telephony: MediaWorkerListener | null = null;
    const workers = await startWorkerPool({
      settings,
      sql: store.sql,
      log,
      onWorkerLost: (workerId) => {
        workerLost = true;
        void (telephony?.workerLost(workerId) ?? Promise.resolve())
          .catch((err: Error) => log.error({ err, workerId }, "ending the lost worker's calls failed"))
          .finally(() => process.kill(process.pid, 'SIGTERM'));
      },
    });
    closers.push(() => workers.close());
    // SIP (telephony): stopped before the workers, so live calls are ended and saved by them and BYEs go out.
    const sip = await startSipService({
      settings,
      sql: store.sql,
      log,
      workers: mediaWorkersOf(workers, (listener) => (telephony = listener)),
    });
    closers.push(() => sip.stop());
    ctx.outboundCalls = sip.outboundCalls;
    node = {
      drain: () => {
        sip.drain();
        workers.drain();
      },
      live: () => {
        const inWorkers = workers.drainLive();
        return inWorkers === null ? null : inWorkers + sip.activeCalls;
      },
      close: closeAll,
    };
    if (metricsExposed(settings)) {
      nodeMetrics.provide({
        sipCalls: () => sip.activeCalls,
        jobQueue: () => queueDepth(store.sql),
        databasePing: async () => {
          const t0 = performance.now();
          try {
            await pingDatabase(store.sql);
            return (performance.now() - t0) / MS_PER_SEC;
          } catch {
            return null; // absent from the scrape; /readyz names the database as unreachable
          }
        },
        readiness: () => ({ ready: nodeReadiness.ready, draining: nodeReadiness.draining }),
      });
      nodeMetrics.runtime.start();
      closers.push(async () => nodeMetrics.runtime.stop());
      if (settings.PARLEY_METRICS_PORT !== undefined) {
        const host = settings.PARLEY_METRICS_HOST ?? settings.PARLEY_HOST;
        let metricsListener: MetricsListener;
        try {
          metricsListener = await listenForMetrics(nodeMetrics, {
            host,
            port: settings.PARLEY_METRICS_PORT,
            token: settings.PARLEY_METRICS_TOKEN,
          });
        } catch (err) {
          throw new ConfigError([
            {
              setting: 'PARLEY_METRICS_PORT',
              message: `cannot listen for metrics on ${host}:${settings.PARLEY_METRICS_PORT}: ${(err as Error).message}`,
            },
          ]);
        }
        closers.push(() => metricsListener.close());
        log.info(
          { url: `http://${host.includes(':') ? `[${host}]` : host}:${metricsListener.port}/metrics` },
          'metrics listening',
        );
      }
    }
    await app.listen({ host: settings.PARLEY_HOST, port: settings.PARLEY_HTTP_PORT });
    port = (app.server.address() as { port: number }).port;
    log.info({ url: ctx.publicUrl() }, 'control plane listening');
    if (first) {
      log.info({ orgId: first.orgId, projectId: first.projectId }, 'created the first workspace and its main project');
      if (!settings.PARLEY_BOOTSTRAP_API_KEY) {
        // The one place the secret is ever shown: print it plainly, once.
        process.stdout.write(`\nParley API key (shown once, keep it): ${first.apiKey}\n\n`);
      }
    }
  } catch (err) {
    await closeAll().catch((e) => log.error({ err: e }, 'shutdown after failed start failed'));
    throw err;
  }
  return node;
}

/**
 * Drains `node`: stops admitting, then waits until nothing runs, `timeoutMs` passes (0: not at all) or the function
 * handed to `onEndNow` is called (a second signal), whichever comes first.
 */
function drain(node: RunningNode, timeoutMs: number, log: Logger, onEndNow: (end: () => void) => void): Promise<void> {
  node.drain();
  return new Promise((resolve) => {
    let done = false;
    const finish = (why: 'idle' | 'timeout' | 'signal', level: 'info' | 'warn') => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      clearInterval(poll);
      log[level](
        { why, live: node.live() },
        why === 'idle' ? 'drained: nothing runs any more' : 'drain cut short: ending what still runs',
      );
      resolve();
    };
    const deadline = setTimeout(() => finish('timeout', 'warn'), timeoutMs);
    const poll = setInterval(() => {
      if (node.live() === 0) finish('idle', 'info');
    }, DRAIN_POLL_MS);
    onEndNow(() => finish('signal', 'warn'));
    if (timeoutMs === 0) finish('timeout', 'info');
  });
}

/** Telephony's view of the worker pool (src/telephony/media-workers.ts). */
function mediaWorkersOf(pool: WorkerPool, onLost: (listener: MediaWorkerListener) => void): MediaWorkers {
  return {
    leastLoaded: () => pool.leastLoaded(),
    send: (workerId, msg) => pool.sendCall(workerId, msg),
    listen: (listener) => {
      pool.onCallNotice((workerId, notice) => listener.notice(workerId, notice));
      onLost(listener);
    },
  };
}

const log = createLogger();
let settings: Settings;
try {
  settings = loadSettings();
  try {
    parseTrustedProxies(settings.PARLEY_TRUSTED_PROXIES);
  } catch (err) {
    throw new ConfigError([{ setting: 'PARLEY_TRUSTED_PROXIES', message: (err as Error).message }]);
  }
} catch (err) {
  if (err instanceof ConfigError) {
    log.fatal({ problems: err.problems }, err.message);
    process.exit(1);
  }
  throw err;
}
log.level = settings.PARLEY_LOG_LEVEL;

// Signals are handled from the first moment: one that arrives during start-up drains the node once it is up.
const startup = start(settings, log);
let signalled = false;
/** Ends the drain at once (a second signal); a no-op before the drain starts waiting and after it. */
let endDrainNow = () => {};
let endNowAsked = false;
const stop = (signal: string) => {
  if (signalled) {
    if (endNowAsked) return void log.info({ signal }, 'already shutting down');
    endNowAsked = true;
    log.warn({ signal }, 'second signal: ending live conversations now');
    endDrainNow();
    return;
  }
  signalled = true;
  nodeReadiness.markDraining();
  const timeoutMs = settings.PARLEY_DRAIN_TIMEOUT_SEC * MS_PER_SEC;
  log.info(
    { signal, drainTimeoutSec: settings.PARLEY_DRAIN_TIMEOUT_SEC },
    'draining: admitting nothing new, letting live conversations finish',
  );
  startup
    .then(async (node) => {
      await drain(node, endNowAsked ? 0 : timeoutMs, log, (end) => (endDrainNow = end));
      nodeReadiness.markStopping();
      log.info('shutting down');
      await node.close();
    })
    .then(
      () => process.exit(workerLost ? EXIT_WORKER_LOST : 0),
      (err: Error) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));

startup.then(
  () => {
    if (signalled) return;
    nodeReadiness.markReady();
    log.info('parley ready');
  },
  (err: Error) => {
    log.fatal({ err: err instanceof StoreError ? { message: err.message } : err }, `start-up failed: ${err.message}`);
    process.exit(1);
  },
);
