// A media worker that crashes mid-call on a node as a user runs it: the SIPp caller gets Parley's BYE, the call's
// record is finished (ended_by error) and its lease freed, and then the node stops for its supervisor to restart
// it. The crash: a hook preloaded into the node terminates its worker threads on SIGUSR2 (crash-hook.ts).
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import t from 'tap';
import { until } from '../helpers/wait.js';
import { agentWithNumber } from './sip-node.js';
import { runSipp, sippCompleted } from './sipp-scenario.js';
import { startPhoneNode } from './phone-node.js';

t.setTimeout(300_000);

const CRASH_HOOK = fileURLToPath(new URL('./crash-hook.ts', import.meta.url));

// Known failure, kept as todo: a worker thread that ends with a call live aborts the whole process (Node:
// "uv_loop_close() while having open handles", one poll handle left open by the worker: its uWS sockets or the
// call's native UDP polls), so no BYE goes out and the record stays open until the next start's recovery.
t.test('a media worker crashes mid-call: BYE to the caller, the record saved, the node stops', {
  todo: 'a worker thread ending with open poll handles aborts the process (SIGABRT) before main can end its calls',
}, async (t) => {
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
  const run = await caller;
  sippCompleted(t, run, 'the caller got Parley\'s BYE');
  t.ok(run.received.some((m) => m.startsWith('BYE ')), 'a BYE');
  t.equal(await node.process.exited, null, 'the node stopped on its own (exit, not a signal)');
  t.match(node.process.output(), /"msg":"media worker ended unexpectedly"/);
  const [row] = await sql<{ state: string; ended_by: string | null }[]>`select state, ended_by from conversations where id = ${id!}`;
  t.match(row, { state: 'ended', ended_by: 'error' }, 'the record finished by main');
  const leases = await sql`select 1 from conversation_leases where conversation_id = ${id!}`;
  t.equal(leases.length, 0, 'its lease freed');
});
