// A media worker that crashes mid-call on a node as a user runs it. The crash: a hook preloaded into the node
// terminates its worker threads on SIGUSR2 (crash-hook.ts), as an uncaught error would end them.
// What a user gets today: the node aborts with the worker (Node: "uv_loop_close() while having open handles", the
// worker's uWS listen socket, with or without calls), so main cannot send the caller a BYE nor finish the record;
// the next start of the node finishes it (ended_by error) and frees its lease. The BYE and a clean stop are todo.
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import t from 'tap';
import { until } from '../helpers/wait.js';
import { agentWithNumber } from './sip-node.js';
import { runSipp } from './sipp-scenario.js';
import { startPhoneNode } from './phone-node.js';

t.setTimeout(300_000);

const CRASH_HOOK = fileURLToPath(new URL('./crash-hook.ts', import.meta.url));
const CRASH_TODO = 'a worker thread ending with its uWS sockets open aborts the whole process (SIGABRT) before main can end its calls';

t.test('a media worker crashes mid-call: the record is finished, at the latest by the next start', async (t) => {
  const node = await startPhoneNode({ preload: [CRASH_HOOK] });
  t.teardown(() => node.stop());
  const sql = postgres(node.databaseUrl, { max: 1, onnotice: () => {} });
  t.teardown(() => sql.end());
  await agentWithNumber(node.client, 'phone', '+14155550100');
  const caller = runSipp({ scenario: 'uac_wait_bye.xml', target: `127.0.0.1:${node.sipPort}`, service: '+14155550100', timeoutMs: 60_000 });
  let id: string | undefined;
  await until(async () => {
    id = (await node.conversationIds())[0];
    return id !== undefined;
  }, { what: 'the call\'s record', timeoutMs: 20_000 });

  node.process.kill('SIGUSR2');
  const exit = await node.process.exited;
  t.equal(exit, null, 'the node stopped on its own, not aborted', { todo: CRASH_TODO });
  const run = await caller;
  t.ok(run.received.some((m) => m.startsWith('BYE ')), 'the caller got a BYE', { todo: CRASH_TODO });

  const restarted = await startPhoneNode({ reuse: { databaseUrl: node.databaseUrl, dataDir: node.dataDir } });
  try {
    await restarted.process.waitFor(/"msg":"parley ready"/);
    const [row] = await sql<{ state: string; ended_by: string | null }[]>`select state, ended_by from conversations where id = ${id!}`;
    t.match(row, { state: 'ended', ended_by: 'error' }, 'the call\'s record finished (ended_by error)');
    const leases = await sql`select 1 from conversation_leases where conversation_id = ${id!}`;
    t.equal(leases.length, 0, 'its lease freed');
    t.match(restarted.process.output(), /recovery: a conversation left in progress by a node that died was ended/);
  } finally {
    await restarted.stop();
  }
});
