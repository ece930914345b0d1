// POST /v1/conversations/outbound_call placing real calls through a trunk to SIPp callees, with a test double as
// the media worker: answered (201; the answer's media and call_start reach the worker; the call ends with a BYE
// from either side), never answered (409 no_answer after the ring timeout, the INVITE cancelled), busy (409
// sip_call_failed), answered and hung up at once (409 call_ended), a trunk's digest challenge answered, a trunk
// server answering 503 passed over for the next one its SRV records name (RFC 3263), the HTTP client going away
// while it rings (CANCEL). A call that did not connect leaves no record and no lease.
import t, { type Test } from 'tap';
import { createUserAgent, type InviteResponder } from '../../sip/index.js';
import { Locator } from '../../src/telephony/locate.js';
import type { Trunk } from '../../src/telephony/trunks.js';
import { startDnsServer } from './dns-server.js';
import { agentWithNumber, startSipNode, type SipNode } from './sip-node.js';
import { freeUdpPort, headerOf, sippCompleted, startSippCallee } from './sipp-scenario.js';

t.setTimeout(300_000);

const TO = '+14155550123';
const OWN = '+14155550100';

const outboundTrunk = (port: number, auth: NonNullable<Trunk['outbound']>['auth'] = null): Trunk => ({
  name: 'carrier',
  inbound: null,
  outbound: { uri: `sip:127.0.0.1:${port}`, transport: null, auth, caller_id: null },
});

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function counts(node: SipNode): Promise<{ conversations: number; leases: number }> {
  const [row] = await node.server.sql<{ conversations: number; leases: number }[]>`
    select (select count(*)::int from conversations) as conversations, (select count(*)::int from conversation_leases) as leases`;
  return row!;
}

async function nothingLeft(t: Test, node: SipNode, conversationsBefore: number): Promise<void> {
  await until(() => node.sip.activeCalls === 0, 'the call released');
  const c = await counts(node);
  t.equal(c.conversations, conversationsBefore, 'no record');
  t.equal(c.leases, 0, 'no lease');
}

t.test('outbound calls through a trunk', async (t) => {
  const calleePort = await freeUdpPort();
  const node = await startSipNode({ trunks: [outboundTrunk(calleePort)], env: { PARLEY_RING_TIMEOUT_SEC: '2' } });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'sales', OWN, { audio_format: 'mulaw_8000' });
  const place = (config: Record<string, unknown> = { agent: 'sales' }) =>
    node.client.post('/v1/conversations/outbound_call', { to_phone_number: TO, config });
  // One callee at a time on the trunk's port; each test waits for its callee to exit.
  const callee = (scenario: string | { builtin: string }) => startSippCallee({ scenario, port: calleePort });

  t.test('answered: 201, the answer reaches the worker, main hangs up with BYE when the worker ends it', async (t) => {
    const sipp = await callee({ builtin: 'uas' });
    t.teardown(() => sipp.done);
    const r = await place({ agent: 'sales', system_prompt: 'Be brief.' });
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.equal(r.body.dry_run, false);
    const assigned = await node.workers.until('call_assigned', (m) => m.conversationId === r.body.conversation_id);
    t.equal(assigned.origin, 'telephony-outbound');
    t.equal(assigned.remote, null, 'assigned before the answer: no remote yet');
    t.same(Object.keys(assigned.callInfo).sort(), ['from_phone_number', 'telephony_call_sid', 'to_phone_number']);
    t.match(assigned.callInfo, { from_phone_number: OWN, to_phone_number: TO });
    t.same(assigned.overrides, { system_prompt: 'Be brief.' }, "the request's config travels as overrides");
    const update = await node.workers.until('call_media_update', (m) => m.callId === assigned.callId);
    t.equal(update.remote?.address, '127.0.0.1');
    t.equal(update.media.codec, 'PCMU');
    await node.workers.until('call_start', (m) => m.callId === assigned.callId);
    await node.workers.end(assigned.callId);
    const run = await sipp.done;
    sippCompleted(t, run, 'the callee got its BYE');
    const invite = run.received.find((m) => m.startsWith('INVITE ')) ?? '';
    t.match(
      invite,
      new RegExp(`^INVITE sip:\\${TO}@127\\.0\\.0\\.1:${calleePort} SIP/2\\.0`),
      "the Request-URI is the number at the trunk's host",
    );
    t.match(
      headerOf(invite, 'From'),
      new RegExp(`<sip:\\${OWN}@127\\.0\\.0\\.1>`),
      "the caller ID is the agent's own number",
    );
    t.equal(
      assigned.callInfo.telephony_call_sid,
      headerOf(invite, 'Call-ID'),
      "the record will name the INVITE's Call-ID",
    );
    t.equal(Number(/^m=audio (\d+) /m.exec(invite)?.[1]), assigned.rtpPort, 'the offer names the allocated RTP port');
    await until(() => node.sip.activeCalls === 0, 'the call released');
    t.equal((await counts(node)).leases, 0);
  });

  t.test(
    'answered with PCMA, the callee hangs up: the worker reassigned the codec, then told (call_hangup bye)',
    async (t) => {
      const sipp = await callee('uas_answer_hangup.xml');
      t.teardown(() => sipp.done);
      const r = await place();
      t.equal(r.status, 201, JSON.stringify(r.body));
      const calls = node.workers.of('call_assigned').filter((m) => m.conversationId === r.body.conversation_id);
      t.same(
        calls.map((m) => [m.media.codec, m.remote === null]),
        [
          ['PCMU', true],
          ['PCMA', false],
        ],
        "offered PCMU first, assigned again with the answer's PCMA",
      );
      t.equal(calls[0]?.rtpPort, calls[1]?.rtpPort, 'on the port the offer named');
      const callId = calls[0]!.callId;
      await node.workers.until('call_start', (m) => m.callId === callId);
      await node.workers.until('call_hangup', (m) => m.callId === callId && m.reason === 'bye');
      sippCompleted(t, await sipp.done, "the callee's BYE was answered");
      await until(() => node.sip.activeCalls === 0, 'the call released');
      t.equal((await counts(node)).leases, 0);
    },
  );

  t.test('answered and hung up at once: 409 call_ended, nothing started', async (t) => {
    // The callee answers with PCMA and hangs up as soon as its 200 is ACKed. The worker, assigned PCMU, is assigned
    // again with PCMA before the call can start; the double holds that second answer until the callee is done, so
    // the BYE is in before the call would start, however loaded the machine.
    const sipp = await callee('uas_answer_bye.xml');
    t.teardown(() => sipp.done);
    node.workers.mediaAnswer = (m) => (m.remote === null ? { ok: true } : 'held');
    t.teardown(() => {
      node.workers.mediaAnswer = () => ({ ok: true });
    });
    const before = (await counts(node)).conversations;
    const earlier = node.workers.of('call_assigned').length;
    const placing = place();
    const reassigned = await node.workers.until(
      'call_assigned',
      (m) => node.workers.of('call_assigned').indexOf(m) >= earlier && m.remote !== null,
    );
    t.equal(reassigned.media.codec, 'PCMA');
    sippCompleted(t, await sipp.done, "the callee's BYE was answered");
    node.workers.answerMedia(reassigned.callId);
    const r = await placing;
    t.equal(r.status, 409, JSON.stringify(r.body));
    t.equal(r.body.error?.code, 'call_ended');
    const assigned = reassigned;
    t.notOk(
      node.workers.of('call_start').some((m) => m.callId === assigned.callId),
      'the conversation never started',
    );
    await nothingLeft(t, node, before);
  });

  t.test('never answered: 409 no_answer after the ring timeout, the INVITE cancelled', async (t) => {
    const sipp = await callee('uas_ring_forever.xml');
    t.teardown(() => sipp.done);
    const before = (await counts(node)).conversations;
    const r = await place();
    t.equal(r.status, 409, JSON.stringify(r.body));
    t.equal(r.body.error?.code, 'no_answer');
    const run = await sipp.done;
    sippCompleted(t, run, 'the callee got CANCEL and the ACK of its 487');
    const assigned = node.workers.of('call_assigned').at(-1)!;
    t.match(
      node.workers.of('call_hangup').find((m) => m.callId === assigned.callId),
      { reason: 'failed' },
    );
    await nothingLeft(t, node, before);
  });

  t.test('busy: 409 sip_call_failed; the caller ID drawn from the pool, blocked numbers left out', async (t) => {
    const sipp = await callee('uas_busy.xml');
    t.teardown(() => sipp.done);
    const before = (await counts(node)).conversations;
    const r = await place({
      agent: 'sales',
      outbound_number_pool: { active: ['+14155550150', '+14155550151'], blocked: ['+14155550150'] },
    });
    t.equal(r.status, 409);
    t.equal(r.body.error?.code, 'sip_call_failed');
    t.match(r.body.error?.message, /486/);
    const run = await sipp.done;
    sippCompleted(t, run);
    t.match(headerOf(run.received.find((m) => m.startsWith('INVITE ')) ?? '', 'From'), /<sip:\+14155550151@/);
    await nothingLeft(t, node, before);
  });

  t.test("nobody at the trunk's address: 409 sip_call_failed within the ring timeout", async (t) => {
    const before = (await counts(node)).conversations;
    const r = await place();
    t.equal(r.status, 409);
    t.equal(r.body.error?.code, 'sip_call_failed');
    await nothingLeft(t, node, before);
  });

  t.test('a config without an agent cannot be placed (400), a dry run of it can (200)', async (t) => {
    const r = await place({ system_prompt: 'Hi' });
    t.equal(r.status, 400);
    t.ok(r.body.param_errors?.['config.agent']);
    t.equal(
      (await node.client.post('/v1/conversations/outbound_call', { to_phone_number: TO, dry_run: true })).status,
      200,
    );
  });
});

t.test('an outbound trunk with digest: the 401 is answered, the call placed', async (t) => {
  const calleePort = await freeUdpPort();
  const node = await startSipNode({ trunks: [outboundTrunk(calleePort, { username: 'parley', password: 's3cret' })] });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'sales', OWN);
  const sipp = await startSippCallee({ scenario: 'uas_digest_challenge.xml', port: calleePort });
  const r = await node.client.post('/v1/conversations/outbound_call', {
    to_phone_number: TO,
    config: { agent: 'sales' },
  });
  t.equal(r.status, 201, JSON.stringify(r.body));
  const assigned = await node.workers.until('call_start');
  await node.workers.end(assigned.callId);
  sippCompleted(t, await sipp.done, 'the callee verified the digest and got its BYE');
});

t.test("RFC 3263: the trunk's first server answers 503, the call goes to the next", async (t) => {
  const [first, second] = [await freeUdpPort(), await freeUdpPort()];
  const dns = await startDnsServer([
    {
      name: '_sip._udp.carrier.test',
      type: 'SRV',
      data: { priority: 10, weight: 0, port: first, target: 'a.carrier.test' },
    },
    {
      name: '_sip._udp.carrier.test',
      type: 'SRV',
      data: { priority: 20, weight: 0, port: second, target: 'b.carrier.test' },
    },
    { name: 'a.carrier.test', type: 'A', data: '127.0.0.1' },
    { name: 'b.carrier.test', type: 'A', data: '127.0.0.1' },
  ]);
  t.teardown(() => dns.close());
  const node = await startSipNode({
    trunks: [
      {
        name: 'carrier',
        inbound: null,
        outbound: { uri: 'sip:carrier.test', transport: null, auth: null, caller_id: '+14155550111' },
      },
    ],
    locator: new Locator({ servers: [dns.address], timeoutMs: 1000, tries: 1 }),
  });
  t.teardown(() => node.close());
  t.equal((await node.client.put('/v1/agents/upsert', { name: 'nonumber' })).status, 200);
  const out = await startSippCallee({ scenario: 'uas_unavailable.xml', port: first });
  const up = await startSippCallee({ scenario: { builtin: 'uas' }, port: second });
  const r = await node.client.post('/v1/conversations/outbound_call', {
    to_phone_number: TO,
    config: { agent: 'nonumber' },
  });
  t.equal(r.status, 201, JSON.stringify(r.body));
  const started = await node.workers.until('call_start');
  await node.workers.end(started.callId);
  const [refused, answered] = [await out.done, await up.done];
  sippCompleted(t, refused, 'the first server saw the INVITE and its 503 was ACKed');
  sippCompleted(t, answered, 'the second answered and got its BYE');
  const invite = answered.received.find((m) => m.startsWith('INVITE ')) ?? '';
  t.match(invite, /^INVITE sip:\+14155550123@carrier\.test SIP\/2\.0/, "the Request-URI names the trunk's host");
  t.match(
    headerOf(invite, 'From'),
    /<sip:\+14155550111@127\.0\.0\.1>/,
    "an agent without a number presents the trunk's caller_id",
  );
});

t.test('the client goes away while the call rings: the INVITE is cancelled, nothing is left', async (t) => {
  // The callee is a sip/ user agent, so the test knows when the call rings before it lets go of the request.
  const callee = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp'] });
  t.teardown(() => callee.close());
  const node = await startSipNode({ trunks: [outboundTrunk(callee.port)], env: { PARLEY_RING_TIMEOUT_SEC: '600' } });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'sales', OWN);
  const ringing = new Promise<{ res: InviteResponder }>((resolve) => {
    callee.on('invite', (_req, res) => {
      res.send(180, 'Ringing');
      resolve({ res });
    });
  });
  const client = new AbortController();
  const request = fetch(`${node.server.url}/v1/conversations/outbound_call`, {
    method: 'POST',
    headers: { authorization: `Bearer ${node.server.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to_phone_number: TO, config: { agent: 'sales' } }),
    signal: client.signal,
  }).catch((err: Error) => err);
  const { res } = await ringing;
  t.equal(res.isCancelled, false, 'ringing');
  client.abort();
  t.ok((await request) instanceof Error, 'the client gave up');
  await res.cancelled;
  t.equal(res.isCancelled, true, 'the callee got the CANCEL');
  await nothingLeft(t, node, 0);
});
