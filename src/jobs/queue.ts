// The job runner of a node, on main: claims due jobs from the database (src/store/jobs.ts: `for update skip
// locked`, so nodes sharing a database never run one job twice at once), runs the handler of each job's kind
// (src/jobs/handler.ts) with bounded concurrency, and settles it: done or skipped as the handler said; a failure
// retried with exponential backoff and jitter, parked as `failed` with its error after its last attempt; a payload
// the handler refuses parked at once. While a job runs its claim is renewed (heartbeat, every lease/3); a claim not
// renewed for the lease (its node died) is given up by any node's queue and the job claimed again. stop() aborts
// the running jobs (JobContext.signal) and gives them back (pending, the attempt not counted). Nothing is held only
// in memory: a job is a row from its enqueue to its outcome.
//
// Looking for due jobs: every PARLEY_JOBS_POLL_MS, at once when a job of this process was enqueued (wakeJobQueues)
// and when a running job finishes. Polling, because embedded mode's one session carries no LISTEN/NOTIFY between
// connections (docs/ARCHITECTURE.md, "Process shape").
import type { Settings } from '../config.js';
import { conversationNodeId } from '../config.js';
import type { Logger } from '../log.js';
import type { Sql } from '../store/db.js';
import {
  claimJobs,
  ensureRecurringJob,
  reclaimStaleJobs,
  renewClaims,
  settleJob,
  type ClaimedJob,
  type Settlement,
} from '../store/jobs.js';
import { leasePolicy } from '../store/leases.js';
import type { JobContext, JobHandler, JobOutcome } from './handler.js';
import { nodeMetrics } from '../metrics/node.js';

/** Claims renewed per lease: a node may miss all heartbeats but one and keep its jobs. */
const HEARTBEATS_PER_LEASE = 3;
/** Backoff of a failed job: the first retry about this long after the failure, doubling per attempt. */
export const BACKOFF_BASE_MS = 5_000;
/** The longest wait between attempts. */
export const BACKOFF_MAX_MS = 10 * 60_000;
/** How long stop() waits for aborted jobs to give up before giving their claims back regardless. */
const STOP_GRACE_MS = 5_000;
/** Characters of an error kept on the job's row. */
const ERROR_MAX_CHARS = 2_000;

export interface RecurringJob {
  kind: string;
  everyMs: number;
}

export interface JobQueueOptions {
  sql: Sql;
  settings: Settings;
  log: Logger;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  handlers: readonly JobHandler<any>[];
  /** Jobs kept recurring (one row for all nodes, created at start if missing). */
  recurring?: readonly RecurringJob[];
  /** Kinds that must have a handler here (the post-call pipeline's, src/store/jobs.ts POST_CALL_JOBS). */
  requiredKinds?: readonly string[];
  /** This node's name on its claims (default: its lease name, PARLEY_NODE_ID or `<hostname>-<pid>`). */
  claimant?: string;
  /** The pinned jobs this node runs: those of its PARLEY_NODE_ID (default), null for unpinned ones only. */
  pin?: string | null;
  /** Jobs run at once (default PARLEY_JOBS_CONCURRENCY). */
  concurrency?: number;
  pollMs?: number;
  leaseMs?: number;
  /** Attempts of a handler that sets none (default PARLEY_JOBS_MAX_ATTEMPTS). */
  maxAttempts?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  stopGraceMs?: number;
  /** An injected clock (tests): handlers' now() and the time of every statement. Default: the database's. */
  now?: () => Date;
  /** Uniform in [0, 1): the jitter. */
  random?: () => number;
  /** Outbound HTTP to customer URLs handed to handlers (JobContext.fetch; default: the global fetch). */
  fetch?: typeof fetch;
  /** Outbound HTTP to the operator's model servers (JobContext.modelFetch; default: the global fetch). */
  modelFetch?: typeof fetch;
}

export interface JobQueue {
  /** Creates the recurring jobs and starts claiming. */
  start(): Promise<void>;
  /** Stops claiming, aborts the running jobs and gives them back; resolves once they are settled. */
  stop(): Promise<void>;
  /** Looks for due jobs now. */
  wake(): void;
  /**
   * Without start(): claims and runs due jobs, round after round, until none is due; resolves with how many ran.
   * For tests and tools; the queue's loop does this by itself.
   */
  drain(): Promise<number>;
}

/** The queues started in this process: woken when a job is enqueued here. */
const started = new Set<JobQueue>();

/** Wakes this process's queues (after enqueuing a job, so it runs without waiting for the next poll). */
export function wakeJobQueues(): void {
  for (const q of started) q.wake();
}

/** Exponential backoff with jitter: half of min(max, base * 2^(attempt-1)) fixed, the other half random. */
export function retryDelay(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message || err.name : String(err);
  return text.length > ERROR_MAX_CHARS ? `${text.slice(0, ERROR_MAX_CHARS)}...` : text;
}

export function createJobQueue(o: JobQueueOptions): JobQueue {
  const { sql, settings } = o;
  const log = o.log.child({ component: 'jobs' });
  const handlers = new Map<string, JobHandler<unknown>>();
  for (const h of o.handlers) {
    if (handlers.has(h.kind)) throw new Error(`two job handlers of kind ${h.kind}`);
    handlers.set(h.kind, h);
  }
  const missing = (o.requiredKinds ?? []).filter((k) => !handlers.has(k));
  if (missing.length > 0) throw new Error(`no job handler of kind ${missing.join(', ')}`);
  const kinds = [...handlers.keys()];
  const claimant = o.claimant ?? leasePolicy(settings).nodeId;
  const pin = o.pin === undefined ? conversationNodeId(settings) : o.pin;
  const concurrency = o.concurrency ?? settings.PARLEY_JOBS_CONCURRENCY;
  const pollMs = o.pollMs ?? settings.PARLEY_JOBS_POLL_MS;
  const leaseMs = o.leaseMs ?? settings.PARLEY_JOBS_LEASE_SEC * 1000;
  const maxAttempts = o.maxAttempts ?? settings.PARLEY_JOBS_MAX_ATTEMPTS;
  const backoffBaseMs = o.backoffBaseMs ?? BACKOFF_BASE_MS;
  const backoffMaxMs = o.backoffMaxMs ?? BACKOFF_MAX_MS;
  const stopGraceMs = o.stopGraceMs ?? STOP_GRACE_MS;
  const random = o.random ?? Math.random;
  const doFetch = o.fetch ?? fetch;
  const modelFetch = o.modelFetch ?? fetch;
  /** The time of a statement: the injected clock's, else null (the database's). */
  const sqlNow = () => (o.now ? o.now() : null);
  const now = o.now ?? (() => new Date());

  const controller = new AbortController();
  /** The jobs running, by claim token. */
  const running = new Map<string, Promise<void>>();
  let stopping = false;
  let loop: Promise<void> | null = null;
  let heartbeat: NodeJS.Timeout | null = null;
  let lastReclaimMs = -Infinity;
  /** Ends the loop's current pause. */
  let nudge: (() => void) | null = null;
  /** A poke came while the loop was not pausing: its next pause ends at once. */
  let poked = false;

  const poke = () => {
    const n = nudge;
    nudge = null;
    if (n) n();
    else poked = true;
  };

  function pause(ms: number): Promise<void> {
    if (poked) {
      poked = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        nudge = null;
        resolve();
      }
      nudge = done;
    });
  }

  async function settle(job: ClaimedJob, s: Settlement, jlog: Logger): Promise<void> {
    const held = await settleJob(sql, job.token, s, sqlNow());
    if (!held)
      jlog.warn(
        { outcome: s.status },
        'job: its claim was taken back meanwhile (stale, or rerun); outcome not recorded',
      );
  }

  async function runJob(job: ClaimedJob): Promise<void> {
    const jlog = log.child({
      jobId: job.id,
      kind: job.kind,
      ...(job.conversationId ? { conversationId: job.conversationId } : {}),
    });
    if (stopping) return settle(job, { status: 'released' }, jlog);
    const handler = handlers.get(job.kind)!;
    const max = handler.maxAttempts ?? maxAttempts;
    if (job.attempts > max) {
      jlog.error({ attempts: job.attempts }, 'job parked: every attempt ended with its node stopping');
      return settle(
        job,
        { status: 'failed', error: `gave up after ${max} attempts: the node running it stopped each time` },
        jlog,
      );
    }
    let payload: unknown;
    try {
      payload = handler.parse(job.payload);
    } catch (err) {
      jlog.error({ err }, 'job parked: its payload is invalid');
      nodeMetrics.jobsFailed.inc({ kind: job.kind, final: 'true' });
      return settle(job, { status: 'failed', error: `invalid payload: ${errorText(err)}` }, jlog);
    }
    const ctx: JobContext = { sql, settings, log: jlog, now, fetch: doFetch, modelFetch, signal: controller.signal };
    let outcome: JobOutcome;
    try {
      outcome = await handler.run(payload, ctx);
    } catch (err) {
      if (controller.signal.aborted) {
        jlog.info('job stopped with the node: given back');
        return settle(job, { status: 'released' }, jlog);
      }
      const error = errorText(err);
      nodeMetrics.jobsFailed.inc({ kind: job.kind, final: String(job.attempts >= max) });
      if (job.attempts >= max) {
        jlog.error({ err, attempts: job.attempts }, 'job failed: parked after its last attempt');
        return settle(job, { status: 'failed', error }, jlog);
      }
      const delayMs = retryDelay(job.attempts, backoffBaseMs, backoffMaxMs, random);
      jlog.warn({ err, attempts: job.attempts, retryInMs: delayMs }, 'job failed: retried');
      return settle(job, { status: 'retry', error, delayMs }, jlog);
    }
    if (outcome.status === 'skipped') jlog.info({ reason: outcome.reason }, 'job skipped');
    else jlog.debug({ detail: outcome.detail }, 'job done');
    await settle(job, outcome.status === 'done' ? { status: 'done', detail: outcome.detail ?? null } : outcome, jlog);
  }

  /** Runs a claimed job in the background; a failure to settle it leaves it claimed until its lease runs out. */
  function track(job: ClaimedJob): void {
    const p = runJob(job)
      .catch((err: unknown) =>
        log.error(
          { err, jobId: job.id, kind: job.kind },
          'job: settling failed; claimed again once its lease runs out',
        ),
      )
      .finally(() => {
        running.delete(job.token);
        poke();
      });
    running.set(job.token, p);
  }

  async function reclaim(): Promise<void> {
    lastReclaimMs = performance.now();
    const taken = await reclaimStaleJobs(sql, leaseMs, sqlNow());
    for (const j of taken)
      log.warn({ jobId: j.id, kind: j.kind, node: j.locked_by }, 'job claim expired (its node stopped): pending again');
  }

  async function run(): Promise<void> {
    while (!stopping) {
      try {
        if (performance.now() - lastReclaimMs >= leaseMs / HEARTBEATS_PER_LEASE) await reclaim();
        const free = concurrency - running.size;
        if (free > 0) {
          const jobs = await claimJobs(sql, { kinds, claimant, pin, limit: free, now: sqlNow() });
          for (const job of jobs) track(job);
          // Room left and none due: nothing to do until the next poll or a wake.
        }
      } catch (err) {
        log.error({ err }, 'job queue: looking for due jobs failed');
      }
      if (!stopping) await pause(pollMs);
    }
  }

  const queue: JobQueue = {
    async start() {
      if (loop) return;
      for (const r of o.recurring ?? []) await ensureRecurringJob(sql, r.kind, r.everyMs, sqlNow());
      heartbeat = setInterval(() => {
        renewClaims(sql, [...running.keys()], sqlNow()).catch((err: unknown) =>
          log.error({ err }, 'job queue: heartbeat failed'),
        );
      }, leaseMs / HEARTBEATS_PER_LEASE);
      started.add(queue);
      loop = run();
      log.info({ kinds, concurrency, claimant, pin }, 'job queue started');
    },

    async stop() {
      if (stopping) return;
      stopping = true;
      started.delete(queue);
      poke();
      controller.abort(new Error('the node is stopping'));
      await loop;
      const all = Promise.allSettled([...running.values()]);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, stopGraceMs)))]);
      clearTimeout(timer);
      if (heartbeat) clearInterval(heartbeat);
      // Handlers that ignored the abort: their claims are given back so another node need not wait for the lease.
      for (const token of running.keys()) {
        await settleJob(sql, token, { status: 'released' }, sqlNow()).catch((err: unknown) =>
          log.error({ err }, 'job queue: giving a job back failed'),
        );
      }
      log.info('job queue stopped');
    },

    wake: poke,

    async drain() {
      let ran = 0;
      for (;;) {
        await reclaim();
        const jobs = await claimJobs(sql, { kinds, claimant, pin, limit: concurrency, now: sqlNow() });
        if (jobs.length === 0) return ran;
        await Promise.all(jobs.map((job) => runJob(job)));
        ran += jobs.length;
      }
    },
  };
  return queue;
}
