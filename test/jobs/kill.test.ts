// Killing a node mid-job loses nothing: a real child process runs a queue on PostgreSQL and is killed (SIGKILL)
// while its job runs; the job stays claimed by the dead node until its lease runs out, then another queue takes it
// back and runs it to the end.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import type { JobHandler } from '../../src/jobs/handler.js';
import { createJobQueue } from '../../src/jobs/queue.js';
import { enqueueJob, listJobs } from '../../src/store/jobs.js';
import { startTestServer, USER_NODE, userEnv } from '../helpers/server.js';
import { manualClock, quiet } from './helpers.js';

t.setTimeout(120_000);

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHILD = fileURLToPath(new URL('./fixtures/queue-child.ts', import.meta.url));
const LEASE_MS = 60_000;

t.test('a node killed mid-job: the job is claimed again after the lease and finishes', async (t) => {
  const server = await startTestServer({ db: 'postgres' });
  t.teardown(() => server.close());
  await enqueueJob(server.sql, { kind: 'test_killed', payload: { n: 7 } });

  const [cmd, ...pre] = USER_NODE;
  const child = spawn(cmd, [...pre, '--import', 'tsx', CHILD], {
    cwd: ROOT,
    env: userEnv({ DATABASE_URL: server.settings.DATABASE_URL! }),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('started\n')) resolve();
    });
    child.on('exit', () => reject(new Error(`the child exited before its job started: ${out}`)));
  });
  const running = (await listJobs(server.sql, 'test_killed'))[0];
  t.match(running, { status: 'running', locked_by: 'child-node', attempts: 1 }, 'the child holds the job');
  child.kill('SIGKILL');
  t.equal(await exited, 'SIGKILL', 'the child was killed');

  // Another node, its clock at the end of the dead claim's lease and just past it.
  const clock = manualClock(new Date(running.locked_at!.getTime() + LEASE_MS));
  const finished: number[] = [];
  const handler: JobHandler<{ n: number }> = {
    kind: 'test_killed',
    parse: (p) => p as { n: number },
    run: async (p) => (finished.push(p.n), { status: 'done' }),
  };
  const q = createJobQueue({
    sql: server.sql,
    settings: server.settings,
    log: quiet,
    handlers: [handler],
    claimant: 'node-b',
    pin: null,
    leaseMs: LEASE_MS,
    now: clock.now,
  });
  t.equal(await q.drain(), 0, 'the claim holds for its lease');
  clock.advance(1);
  t.equal(await q.drain(), 1, 'taken back once the lease ran out');
  t.same(finished, [7], 'the job ran to its end with its payload');
  t.match((await listJobs(server.sql, 'test_killed'))[0], { status: 'done', attempts: 2, locked_by: null });
});
