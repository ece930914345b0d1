// A media worker that dies with live calls (PostgreSQL): main sends each of its calls a BYE, finishes their records
// itself (ended_by error, with their duration; the lease freed) and frees their ports; a call of another worker goes
// on; a call whose media was being set up is refused with 503. The worker double stands in for the workers.
import t from 'tap';
import { agentWithNumber, startSipNode, type SipNode } from './sip-node.js';
import { runSipp, sippCompleted } from './sipp-scenario.js';

t.setTimeout(300_000);

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function record(node: SipNode, id: string) {
  const [row] = await node.server.sql<{ state: string; ended_by: string | null }[]>`
    select state, ended_by from conversations where id = ${id}`;
  return row;
}

async function lease(node: SipNode, id: string): Promise<boolean> {
  const rows = await node.server.sql`select 1 from conversation_leases where conversation_id = ${id}`;
  return rows.length > 0;
}

t.test('a worker dies with live calls', async (t) => {
  const node = await startSipNode({ workers: 2 });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'sales', '+14155550100');
  const callers = [0, 1].map(async (i) => {
    // Stagger the callers so the first is on worker 0 and the second on worker 1 (the least loaded then).
    await until(() => node.workers.of('call_start').length >= i, `call ${i - 1} started`);
    return runSipp({
      scenario: 'uac_wait_bye.xml',
      target: `127.0.0.1:${node.sip.port}`,
      service: '+14155550100',
      timeoutMs: 60_000,
    });
  });
  await until(() => node.workers.of('call_start').length === 2, 'both calls started');
  const [a, b] = node.workers.of('call_assigned');
  t.same(
    [
      a?.rtpPort !== b?.rtpPort,
      node.workers.sent.find((s) => s.msg === a)?.workerId,
      node.workers.sent.find((s) => s.msg === b)?.workerId,
    ],
    [true, 0, 1],
    'one call on each worker',
  );
  await until(async () => (await record(node, a!.conversationId)) !== undefined, 'the record of the first call');

  await node.workers.crash(0);
  sippCompleted(t, await callers[0]!, 'the first caller got its BYE');
  t.match(await record(node, a!.conversationId), { state: 'ended', ended_by: 'error' }, 'its record finished by main');
  t.equal(await lease(node, a!.conversationId), false, 'its lease freed');
  t.equal(node.sip.activeCalls, 1, "the other worker's call goes on");
  t.match(await record(node, b!.conversationId), { state: 'active' });

  t.test("the other worker's call goes on until that worker ends it", async (t) => {
    await node.workers.end(b!.callId);
    sippCompleted(t, await callers[1]!, 'the second caller got its BYE');
    t.match(await record(node, b!.conversationId), { state: 'ended', ended_by: 'assistant' });
    await until(() => node.sip.activeCalls === 0, 'no call left');
  });
});

t.test("a worker dies while it binds a call's ports: the caller gets 503, no record, no lease", async (t) => {
  const node = await startSipNode({ workers: 1 });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'sales', '+14155550100');
  node.workers.mediaAnswer = () => 'held';
  const caller = runSipp({
    scenario: 'uac_refused.xml',
    target: `127.0.0.1:${node.sip.port}`,
    service: '+14155550100',
    keys: { pt: '0', rtpmap: '0 PCMU/8000' },
  });
  const assigned = await node.workers.until('call_assigned');
  await node.workers.crash(0);
  const run = await caller;
  t.same(
    run.statuses.filter((s) => s >= 200),
    [503],
  );
  await until(() => node.sip.activeCalls === 0, 'the call released');
  t.equal(await record(node, assigned.conversationId), undefined);
  t.equal(await lease(node, assigned.conversationId), false);
});
