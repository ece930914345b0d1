// Draining, then stopping the SIP service (SIGTERM's steps): while draining, OPTIONS and new INVITEs get 503 and live
// calls go on. Stopping: from then on OPTIONS and new INVITEs get 503, each live call is
// hung up (`shutdown`) and ended and saved by its worker, the caller gets its BYE, and only then does SIP close.
import t from 'tap';
import { agentWithNumber, startSipNode } from './sip-node.js';
import { runSipp, sippCompleted } from './sipp-scenario.js';

t.setTimeout(300_000);

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('graceful stop with a live call', async (t) => {
  const node = await startSipNode();
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'sales', '+14155550100');
  const caller = runSipp({
    scenario: 'uac_wait_bye.xml',
    target: `127.0.0.1:${node.sip.port}`,
    service: '+14155550100',
  });
  const started = await node.workers.until('call_start');
  const assigned = node.workers.assigned.get(started.callId)!;
  await until(
    async () => (await node.server.sql`select 1 from conversations where id = ${assigned.conversationId}`).length > 0,
    'the record',
  );

  node.workers.pauseEnds(); // the worker takes its time to save the call
  let stopped = false;
  const stopping = node.sip.stop(10_000).then(() => {
    stopped = true;
  });
  const hangup = await node.workers.until('call_hangup', (m) => m.callId === started.callId);
  t.equal(hangup.reason, 'shutdown');
  const options = await runSipp({
    scenario: 'uac_refused.xml',
    target: `127.0.0.1:${node.sip.port}`,
    service: '+14155550100',
    keys: { pt: '0', rtpmap: '0 PCMU/8000' },
  });
  t.same(
    options.statuses.filter((s) => s >= 200),
    [503],
    'a new INVITE is refused while stopping',
  );
  const probe = await runSipp({ scenario: 'options.xml', target: `127.0.0.1:${node.sip.port}` });
  t.same(probe.statuses, [503], 'OPTIONS says 503 while stopping');
  t.equal(stopped, false, 'SIP stays up while the worker saves the call');

  await node.workers.resumeEnds();
  sippCompleted(t, await caller, 'the caller got its BYE');
  await stopping;
  const [row] = await node.server.sql<
    { state: string; ended_by: string }[]
  >`select state, ended_by from conversations where id = ${assigned.conversationId}`;
  t.match(row, { state: 'ended', ended_by: 'error' }, 'saved by its worker');
  t.equal(node.sip.activeCalls, 0);
});

t.test('a drain refuses new calls and OPTIONS; the live call goes on until its caller hangs up', async (t) => {
  const node = await startSipNode();
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'sales', '+14155550100');
  // The caller stays 8 s in the call, then hangs up.
  const caller = runSipp({
    scenario: 'uac_talks.xml',
    target: `127.0.0.1:${node.sip.port}`,
    service: '+14155550100',
    pauseMs: 8_000,
  });
  const started = await node.workers.until('call_start');

  node.sip.drain();
  const refused = await runSipp({
    scenario: 'uac_refused.xml',
    target: `127.0.0.1:${node.sip.port}`,
    service: '+14155550100',
    keys: { pt: '0', rtpmap: '0 PCMU/8000' },
  });
  t.same(
    refused.statuses.filter((s) => s >= 200),
    [503],
    'a new INVITE: 503 while draining',
  );
  const probe = await runSipp({ scenario: 'options.xml', target: `127.0.0.1:${node.sip.port}` });
  t.same(probe.statuses, [503], 'OPTIONS: 503 while draining');
  t.equal(node.workers.sent.filter((s) => s.msg.type === 'call_hangup').length, 0, 'the live call was not hung up');

  sippCompleted(t, await caller, 'the caller hung up itself');
  const hangup = await node.workers.until('call_hangup', (m) => m.callId === started.callId);
  t.equal(hangup.reason, 'bye', "ended by the caller's BYE");
  await until(() => node.sip.activeCalls === 0, 'the call to be let go');
});
