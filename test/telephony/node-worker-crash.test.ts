// A media worker that crashes mid-call on a node as a user runs it. The crash: a hook preloaded into the node makes
// its worker threads throw an uncaught error on SIGUSR2 (crash-hook.ts). The worker closes its realtime sockets
// as its thread ends, so the node goes on: main hangs up the worker's call (BYE), finishes its record (ended_by
// error) and frees its lease, then drains and stops with exit code 1 for its supervisor to restart it.
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import t from 'tap';
import { until } from '../helpers/wait.js';
import { agentWithNumber } from './sip-node.js';
import { runSipp } from './sipp-scenario.js';
import { startPhoneNode } from './phone-node.js';

t.setTimeout(300_000);

const CRASH_HOOK = fileURLToPath(new URL('./crash-hook.ts', import.meta.url));
/** main.ts EXIT_WORKER_LOST. */
const EXIT_WORKER_LOST = 1;

t.test(
  'a media worker crashes mid-call: the caller gets a BYE, the record is finished, the node stops cleanly',
  async (t) => {
    const node = await startPhoneNode({ preload: [CRASH_HOOK] });
    t.teardown(() => node.stop());
    const sql = postgres(node.databaseUrl, { max: 1, onnotice: () => {} });
    t.teardown(() => sql.end());
    await agentWithNumber(node.client, 'phone', '+14155550100');
    const caller = runSipp({
      scenario: 'uac_wait_bye.xml',
      target: `127.0.0.1:${node.sipPort}`,
      service: '+14155550100',
      timeoutMs: 60_000,
    });
    let id: string | undefined;
    await until(
      async () => {
        id = (await node.conversationIds())[0];
        return id !== undefined;
      },
      { what: "the call's record", timeoutMs: 20_000 },
    );
    await node.process.waitFor(/"msg":"inbound call answered"/);

    node.process.kill('SIGUSR2');
    const signal = await node.process.exited;
    t.equal(signal, null, 'the node stopped on its own, not aborted');
    t.equal(node.process.exitCode(), EXIT_WORKER_LOST, 'with the exit code of a lost worker');
    t.match(node.process.output(), /media worker crash \(test hook\)/, "the worker's error is logged");
    t.notMatch(node.process.output(), /uv_loop_close/, 'no abort on open handles');
    const run = await caller;
    t.ok(
      run.received.some((m) => m.startsWith('BYE ')),
      'the caller got a BYE',
    );

    // Before any restart: this node finished the record and freed the lease itself.
    const [row] = await sql<
      { state: string; ended_by: string | null }[]
    >`select state, ended_by from conversations where id = ${id!}`;
    t.match(row, { state: 'ended', ended_by: 'error' }, "the call's record finished (ended_by error)");
    const leases = await sql`select 1 from conversation_leases where conversation_id = ${id!}`;
    t.equal(leases.length, 0, 'its lease freed');

    const restarted = await startPhoneNode({ reuse: { databaseUrl: node.databaseUrl, dataDir: node.dataDir } });
    try {
      await restarted.process.waitFor(/"msg":"parley ready"/);
      t.notMatch(
        restarted.process.output(),
        /recovery: a conversation left in progress by a node that died was ended/,
        'nothing left for the next start to recover',
      );
    } finally {
      await restarted.stop();
    }
  },
);

t.test('a media worker crashes with no call: the node stops cleanly, not aborted', async (t) => {
  const node = await startPhoneNode({ preload: [CRASH_HOOK] });
  t.teardown(() => node.stop());
  node.process.kill('SIGUSR2');
  t.equal(await node.process.exited, null, 'the node stopped on its own, not aborted');
  t.equal(node.process.exitCode(), EXIT_WORKER_LOST, 'with the exit code of a lost worker');
  t.notMatch(node.process.output(), /uv_loop_close/, 'no abort on open handles');
});
