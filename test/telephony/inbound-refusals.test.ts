// Calls Parley refuses, from SIPp as the caller (real SIP over UDP): an unknown number (404), a source no trunk
// trusts (403), a disabled agent (480), a project at its cap (486), an offer without G.711 (488), a rollout share
// redirected (302 with the forward number), an INVITE flood over the source's rate (503 with Retry-After, and the
// node still answers), a trunk's digest challenge answered; and OPTIONS answered 200. None leaves a record, a lease
// or a call behind.
import t, { type Test } from 'tap';
import { admit } from '../../src/store/leases.js';
import { agentWithNumber, inboundTrunk, startSipNode, type SipNode } from './sip-node.js';
import { headerOf, runSipp, sippCompleted } from './sipp-scenario.js';

t.setTimeout(300_000);

const PCMU = { pt: '0', rtpmap: '0 PCMU/8000' };
const G729 = { pt: '18', rtpmap: '18 G729/8000' };

async function refused(node: SipNode, service: string, keys = PCMU, tcp = false) {
  const run = await runSipp({ scenario: 'uac_refused.xml', target: `127.0.0.1:${node.sip.port}`, service, keys, tcp });
  const final = run.received.find((m) => /^SIP\/2\.0 [2-6]\d\d /.test(m)) ?? '';
  return { status: Number(/^SIP\/2\.0 (\d{3})/.exec(final)?.[1] ?? 0), message: final, run };
}

async function nothingLeft(t: Test, node: SipNode): Promise<void> {
  const [{ n }] = await node.server.sql<{ n: number }[]>`select count(*)::int as n from conversations`;
  t.equal(n, 0, 'no conversation was recorded');
  const [{ l }] = await node.server.sql<
    { l: number }[]
  >`select count(*)::int as l from conversation_leases where conversation_id like 'conv_%'`;
  t.equal(l, 0, 'no lease is held');
  t.equal(node.sip.activeCalls, 0, 'no call is held');
  t.same(node.workers.of('call_assigned'), [], 'no worker was given a call');
}

t.test('a node trusting loopback', async (t) => {
  const node = await startSipNode();
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'sales', '+14155550100', { audio_format: 'mulaw_8000' });
  await agentWithNumber(node.client, 'idle', '+14155550101');
  t.equal((await node.client.post('/v1/agents/idle/disable')).status, 200);
  await agentWithNumber(node.client, 'split', '+14155550102', {
    inbound_rollout: 0,
    inbound_rollout_forward_phone_number: '+14155550199',
  });

  t.test('OPTIONS: 200', async (t) => {
    const run = await runSipp({ scenario: 'options.xml', target: `127.0.0.1:${node.sip.port}` });
    sippCompleted(t, run);
    t.same(run.statuses, [200]);
    t.match(headerOf(run.received[0] ?? '', 'Allow'), /INVITE/);
    t.equal(headerOf(run.received[0] ?? '', 'Accept'), 'application/sdp');
  });

  t.test('an unknown number: 404', async (t) => {
    const r = await refused(node, '+14155550999');
    t.equal(r.status, 404);
    sippCompleted(t, r.run);
  });

  t.test('over TCP as well: 404', async (t) => {
    const r = await refused(node, '+14155550999', PCMU, true);
    t.equal(r.status, 404);
    sippCompleted(t, r.run);
  });

  t.test('a disabled agent: 480', async (t) => {
    t.equal((await refused(node, '+14155550101')).status, 480);
  });

  t.test('an offer without PCMU or PCMA: 488 with a Warning', async (t) => {
    const r = await refused(node, '+14155550100', G729);
    t.equal(r.status, 488);
    t.match(headerOf(r.message, 'Warning'), /^304 parley/);
  });

  t.test('a rollout share: 302 to the forward number at the trunk', async (t) => {
    const r = await refused(node, '+14155550102');
    t.equal(r.status, 302);
    t.equal(headerOf(r.message, 'Contact'), '<sip:+14155550199@127.0.0.1>');
  });

  t.test('the project at its cap: 486', async (t) => {
    await node.server.sql`update projects set max_active_conversations = 1 where id = ${node.server.projectId}`;
    const policy = { nodeId: 'node-busy', ttlSec: 60, workspaceCap: 100 };
    t.equal((await admit(node.server.sql, policy, node.server.projectId, 'busy_1')).admitted, true);
    t.teardown(async () => {
      await node.server.sql`delete from conversation_leases where conversation_id = 'busy_1'`;
      await node.server.sql`update projects set max_active_conversations = null where id = ${node.server.projectId}`;
    });
    t.equal((await refused(node, '+14155550100')).status, 486);
  });

  t.test('nothing is left of the refused calls', (t) => nothingLeft(t, node));
});

t.test('a source no trunk trusts: 403', async (t) => {
  const node = await startSipNode({ trunks: [inboundTrunk('elsewhere', ['127.0.0.2'])] });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'sales', '+14155550100');
  const r = await refused(node, '+14155550100');
  t.equal(r.status, 403);
  await nothingLeft(t, node);
});

t.test('an INVITE flood over the source rate: 503 with Retry-After, and the node answers on', async (t) => {
  const node = await startSipNode({ env: { PARLEY_SIP_INVITE_RATE_PER_SEC: '1', PARLEY_SIP_INVITE_BURST: '3' } });
  t.teardown(() => node.close());
  const flood = await runSipp({
    scenario: 'uac_refused.xml',
    target: `127.0.0.1:${node.sip.port}`,
    service: '+14155550999',
    keys: PCMU,
    calls: 40,
    rate: 200,
  });
  const finals = flood.statuses.filter((s) => s >= 200);
  t.equal(finals.length, 40, `every INVITE was answered (${JSON.stringify(finals)})`);
  const limited = flood.received.filter((m) => m.startsWith('SIP/2.0 503 '));
  t.ok(limited.length >= 30, `most were refused for the rate (${limited.length} of 40)`);
  t.ok(finals.filter((s) => s === 404).length >= 3, 'the burst got through to the number lookup');
  t.ok(
    limited.every((m) => Number(headerOf(m, 'Retry-After')) >= 1),
    'each 503 carries Retry-After',
  );
  const after = await runSipp({ scenario: 'options.xml', target: `127.0.0.1:${node.sip.port}` });
  t.same(after.statuses, [200], 'OPTIONS is still answered');
  await nothingLeft(t, node);
});
