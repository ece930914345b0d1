// The durable job queue (src/jobs/queue.ts, src/store/jobs.ts) on PGlite and PostgreSQL: outcomes settled,
// failures retried after an exponential backoff with jitter and parked after the last attempt, a payload the
// handler refuses parked at once, a claim whose node stopped heartbeating taken back, a stop giving its running
// job back to another queue, bounded concurrency, jobs waiting for the kinds they come after; on PostgreSQL two
// runners never running one job twice. Clocks are injected; nothing here asserts how long anything took.
import postgres from 'postgres';
import t from 'tap';
import { z } from 'zod';
import type { JobHandler } from '../../src/jobs/handler.js';
import { createJobQueue, retryDelay, type JobQueueOptions } from '../../src/jobs/queue.js';
import { claimJobs, enqueueJob, ensureRecurringJob, listJobs } from '../../src/store/jobs.js';
import { DB_KINDS, startTestServer, type TestServer } from '../helpers/server.js';
import { deferred, eventually, manualClock, quiet } from './helpers.js';

t.setTimeout(240_000);

const LEASE_MS = 60_000;

function queueOf(server: TestServer, handlers: JobHandler<any>[], extra: Partial<JobQueueOptions> = {}) {
  return createJobQueue({
    sql: server.sql,
    settings: server.settings,
    log: quiet,
    handlers,
    claimant: 'node-a',
    pin: null,
    leaseMs: LEASE_MS,
    pollMs: 20,
    maxAttempts: 3,
    backoffBaseMs: 1000,
    backoffMaxMs: 60_000,
    random: () => 0.5,
    ...extra,
  });
}

const jobOf = async (server: TestServer, kind: string) => (await listJobs(server.sql, kind))[0];

for (const db of DB_KINDS) {
  t.test(`job queue on ${db}`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());

    t.test('a job runs once with its payload and is settled done; a skip keeps its reason', async (t) => {
      const seen: unknown[] = [];
      const ok: JobHandler<{ n: number }> = {
        kind: 'test_ok',
        parse: (p) => z.object({ n: z.number() }).parse(p),
        run: async (p, ctx) => {
          seen.push(p);
          t.equal(ctx.signal.aborted, false, 'not aborted');
          return { status: 'done', detail: { doubled: p.n * 2 } };
        },
      };
      const skip: JobHandler<unknown> = {
        kind: 'test_skip',
        parse: (p) => p,
        run: async () => ({ status: 'skipped', reason: 'nothing to do' }),
      };
      const q = queueOf(server, [ok, skip]);
      t.equal(await enqueueJob(server.sql, { kind: 'test_ok', key: 'test_ok:1', payload: { n: 21 } }), true);
      t.equal(
        await enqueueJob(server.sql, { kind: 'test_ok', key: 'test_ok:1', payload: { n: 99 } }),
        false,
        'one job per key',
      );
      await enqueueJob(server.sql, { kind: 'test_skip' });
      t.equal(await q.drain(), 2, 'two jobs ran');
      t.same(seen, [{ n: 21 }], 'the handler got the payload, once');
      t.match(await jobOf(server, 'test_ok'), {
        status: 'done',
        attempts: 1,
        detail: { doubled: 42 },
        error: null,
        locked_by: null,
      });
      t.match(await jobOf(server, 'test_skip'), { status: 'skipped', reason: 'nothing to do', attempts: 1 });
      t.equal(await q.drain(), 0, 'nothing left');
    });

    t.test('a failure is retried after its backoff, then parked as failed with its error', async (t) => {
      const clock = manualClock();
      let runs = 0;
      const fail: JobHandler<unknown> = {
        kind: 'test_fail',
        parse: (p) => p,
        run: async () => {
          runs++;
          throw new Error(`upstream down (${runs})`);
        },
      };
      const q = queueOf(server, [fail], { now: clock.now });
      await enqueueJob(server.sql, { kind: 'test_fail', runAt: clock.now() });
      t.equal(await q.drain(), 1);
      let job = await jobOf(server, 'test_fail');
      // random 0.5: three quarters of the ceiling (base 1000 ms, doubling).
      const first = retryDelay(1, 1000, 60_000, () => 0.5);
      t.equal(first, 750);
      t.match(job, { status: 'pending', attempts: 1, error: 'upstream down (1)' }, 'pending again, its error kept');
      t.equal(job.run_at.getTime(), clock.now().getTime() + first, 'due after the backoff');
      clock.advance(first - 1);
      t.equal(await q.drain(), 0, 'not before its time');
      clock.advance(1);
      t.equal(await q.drain(), 1, 'retried at its time');
      job = await jobOf(server, 'test_fail');
      t.equal(job.run_at.getTime(), clock.now().getTime() + retryDelay(2, 1000, 60_000, () => 0.5), 'the wait doubled');
      t.equal(
        retryDelay(2, 1000, 60_000, () => 0.5),
        1500,
      );
      clock.advance(1500);
      t.equal(await q.drain(), 1);
      job = await jobOf(server, 'test_fail');
      t.match(job, { status: 'failed', attempts: 3, error: 'upstream down (3)' }, 'parked after its last attempt');
      clock.advance(3_600_000);
      t.equal(await q.drain(), 0, 'a parked job never runs again');
      t.equal(runs, 3);
    });

    t.test('jitter stays within half and all of the doubled ceiling, which is capped', async (t) => {
      t.equal(
        retryDelay(1, 1000, 60_000, () => 0),
        500,
      );
      t.equal(
        retryDelay(1, 1000, 60_000, () => 0.999999),
        1000,
      );
      t.equal(
        retryDelay(4, 1000, 60_000, () => 0),
        4000,
      );
      t.equal(
        retryDelay(30, 1000, 60_000, () => 0),
        30_000,
        'capped',
      );
    });

    t.test('a payload the handler refuses parks the job at once, without running it', async (t) => {
      let ran = false;
      const strict: JobHandler<{ conversation_id: string }> = {
        kind: 'test_strict',
        parse: (p) => z.object({ conversation_id: z.string() }).parse(p),
        run: async () => {
          ran = true;
          return { status: 'done' };
        },
      };
      const q = queueOf(server, [strict]);
      await enqueueJob(server.sql, { kind: 'test_strict', payload: { conversation_id: 42 } });
      t.equal(await q.drain(), 1);
      t.equal(ran, false, 'never run');
      const job = await jobOf(server, 'test_strict');
      t.equal(job.status, 'failed');
      t.equal(job.attempts, 1, 'parked on its first attempt');
      t.match(job.error, /^invalid payload: /);
    });

    t.test('a claim whose node stopped heartbeating is taken back after the lease, and the job runs', async (t) => {
      const clock = manualClock();
      let runs = 0;
      const work: JobHandler<unknown> = {
        kind: 'test_stale',
        parse: (p) => p,
        run: async () => (runs++, { status: 'done' }),
      };
      await enqueueJob(server.sql, { kind: 'test_stale', runAt: clock.now() });
      // A node claims it and dies (never settles, never heartbeats).
      const [claimed] = await claimJobs(server.sql, {
        kinds: ['test_stale'],
        claimant: 'node-dead',
        pin: null,
        limit: 5,
        now: clock.now(),
      });
      t.ok(claimed, 'claimed by the dead node');
      const q = queueOf(server, [work], { now: clock.now });
      clock.advance(LEASE_MS);
      t.equal(await q.drain(), 0, 'within its lease the claim holds');
      t.match(await jobOf(server, 'test_stale'), { status: 'running', locked_by: 'node-dead' });
      clock.advance(1);
      t.equal(await q.drain(), 1, 'taken back and run');
      t.equal(runs, 1);
      const job = await jobOf(server, 'test_stale');
      t.match(job, { status: 'done', attempts: 2, locked_by: null }, 'the dead claim counted as an attempt');
    });

    t.test('stop aborts a running job and gives it back; another queue runs it to the end', async (t) => {
      const started = deferred();
      const hang: JobHandler<unknown> = {
        kind: 'test_long',
        parse: (p) => p,
        run: (_p, ctx) =>
          new Promise((_resolve, reject) => {
            started.resolve();
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
          }),
      };
      const a = queueOf(server, [hang]);
      await a.start();
      await enqueueJob(server.sql, { kind: 'test_long' });
      a.wake();
      await started.promise;
      t.match(await jobOf(server, 'test_long'), { status: 'running', attempts: 1 });
      await a.stop();
      t.match(
        await jobOf(server, 'test_long'),
        { status: 'pending', attempts: 0, locked_by: null },
        'given back, the attempt not counted',
      );
      const b = queueOf(server, [{ kind: 'test_long', parse: (p) => p, run: async () => ({ status: 'done' }) }], {
        claimant: 'node-b',
      });
      t.equal(await b.drain(), 1);
      t.match(await jobOf(server, 'test_long'), { status: 'done', attempts: 1 });
    });

    t.test('no more jobs run at once than the concurrency', async (t) => {
      let active = 0;
      let most = 0;
      const gate = deferred();
      const slow: JobHandler<unknown> = {
        kind: 'test_bounded',
        parse: (p) => p,
        run: async () => {
          active++;
          most = Math.max(most, active);
          await gate.promise;
          active--;
          return { status: 'done' };
        },
      };
      for (let i = 0; i < 6; i++) await enqueueJob(server.sql, { kind: 'test_bounded' });
      const q = queueOf(server, [slow], { concurrency: 2 });
      await q.start();
      t.teardown(() => q.stop());
      await eventually('two jobs running', () => active === 2);
      gate.resolve();
      await eventually('all six done', async () =>
        (await listJobs(server.sql, 'test_bounded')).every((j) => j.status === 'done'),
      );
      t.equal(most, 2, 'two at most at once');
    });

    t.test('a job waits for the kinds it comes after, whatever their outcome', async (t) => {
      const order: string[] = [];
      const first: JobHandler<unknown> = {
        kind: 'test_first',
        parse: (p) => p,
        run: async () => (order.push('first'), { status: 'skipped', reason: 'n/a' }),
      };
      const then: JobHandler<unknown> = {
        kind: 'test_then',
        parse: (p) => p,
        run: async () => (order.push('then'), { status: 'done' }),
      };
      const [conv] = await server.sql<
        { id: string }[]
      >`insert into conversations (id, org_id, project_id, origin, model,
          input_format, output_format, analysis_id)
        values ('conv_jobs_order', ${server.orgId}, ${server.projectId}, 'web', 'm', 'pcm_16000', 'pcm_16000', 'a') returning id`;
      await enqueueJob(server.sql, { kind: 'test_then', conversationId: conv.id, afterKinds: ['test_first'] });
      await enqueueJob(server.sql, { kind: 'test_first', conversationId: conv.id });
      const onlyThen = queueOf(server, [then]);
      t.equal(await onlyThen.drain(), 0, 'not while the kind before it is pending');
      const both = queueOf(server, [first, then]);
      t.equal(await both.drain(), 2);
      t.same(order, ['first', 'then']);
    });

    t.test('a recurring job runs again its interval after each outcome', async (t) => {
      const clock = manualClock(new Date('2026-11-28T00:00:00.000Z'));
      let runs = 0;
      const tick: JobHandler<unknown> = {
        kind: 'test_tick',
        parse: (p) => p,
        run: async () => {
          runs++;
          if (runs === 2) throw new Error('one bad run');
          return { status: 'done', detail: { run: runs } };
        },
      };
      const q = queueOf(server, [tick], { now: clock.now, maxAttempts: 1 });
      await ensureRecurringJob(server.sql, 'test_tick', 60_000, clock.now());
      await ensureRecurringJob(server.sql, 'test_tick', 60_000, clock.now());
      t.equal((await listJobs(server.sql, 'test_tick')).length, 1, 'one row for all nodes');
      t.equal(await q.drain(), 1);
      let job = await jobOf(server, 'test_tick');
      t.match(job, { status: 'pending', attempts: 0, detail: { run: 1 } }, 'pending again with its last outcome');
      t.equal(job.run_at.getTime(), clock.now().getTime() + 60_000);
      t.equal(await q.drain(), 0);
      clock.advance(60_000);
      t.equal(await q.drain(), 1);
      job = await jobOf(server, 'test_tick');
      t.match(job, { status: 'pending', error: 'one bad run' }, 'a failed run does not stop it');
      clock.advance(60_000);
      t.equal(await q.drain(), 1);
      t.equal(runs, 3);
    });

    t.test('a queue without a handler of a required kind does not start', async (t) => {
      t.throws(
        () => queueOf(server, [], { requiredKinds: ['post_call_transcript'] }),
        /no job handler of kind post_call_transcript/,
      );
      const h: JobHandler<unknown> = { kind: 'dup', parse: (p) => p, run: async () => ({ status: 'done' }) };
      t.throws(() => queueOf(server, [h, h]), /two job handlers of kind dup/);
    });
  });
}

t.test('two runners on one PostgreSQL never run a job twice', async (t) => {
  const server = await startTestServer({ db: 'postgres' });
  t.teardown(() => server.close());
  const second = postgres(server.settings.DATABASE_URL!, { max: 4, onnotice: () => {} });
  t.teardown(() => second.end({ timeout: 5 }));
  const JOBS = 60;
  const runs: number[] = [];
  const byRunner = { a: 0, b: 0 };
  const handler = (runner: 'a' | 'b'): JobHandler<{ n: number }> => ({
    kind: 'test_shared',
    parse: (p) => z.object({ n: z.number() }).parse(p),
    run: async (p) => {
      runs.push(p.n);
      byRunner[runner]++;
      await new Promise((r) => setImmediate(r));
      return { status: 'done' };
    },
  });
  for (let n = 0; n < JOBS; n++) await enqueueJob(server.sql, { kind: 'test_shared', payload: { n } });
  const a = queueOf(server, [handler('a')], { concurrency: 4, claimant: 'runner-a' });
  const b = createJobQueue({
    sql: second,
    settings: server.settings,
    log: quiet,
    handlers: [handler('b')],
    claimant: 'runner-b',
    pin: null,
    concurrency: 4,
    pollMs: 20,
  });
  await Promise.all([a.start(), b.start()]);
  t.teardown(() => Promise.all([a.stop(), b.stop()]));
  await eventually('every job done', async () =>
    (await listJobs(server.sql, 'test_shared')).every((j) => j.status === 'done'),
  );
  t.equal(runs.length, JOBS, 'as many runs as jobs');
  t.same(
    [...new Set(runs)].sort((x, y) => x - y),
    [...Array(JOBS).keys()],
    'each job ran exactly once',
  );
  t.equal(byRunner.a + byRunner.b, JOBS);
  t.ok(
    (await listJobs(server.sql, 'test_shared')).every((j) => j.attempts === 1),
    'each claimed once',
  );
});
