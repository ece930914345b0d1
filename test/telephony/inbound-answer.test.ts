// The answer path of an inbound call with SIPp as the caller and a test double as the media worker: the INVITE
// becomes call_assigned (agent, call_info, the codec, the allocated RTP port), the 200 OK's SDP carries that port,
// call_start follows; INFO digits and a hold reach the worker; the caller's BYE reaches it (call_hangup bye); the
// worker ending the call makes main send BYE; a CANCEL before the answer leaves no record and no lease; a trunk's
// digest challenge is answered.
import t from 'tap';
import { agentWithNumber, inboundTrunk, startSipNode, type SipNode } from './sip-node.js';
import { headerOf, runSipp, sippCompleted } from './sipp-scenario.js';

t.setTimeout(300_000);

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function conversation(node: SipNode, id: string) {
  const [row] = await node.server.sql<
    {
      state: string;
      ended_by: string | null;
      origin: string;
      from_phone_number: string;
      to_phone_number: string;
      telephony_call_sid: string;
    }[]
  >`
    select state, ended_by, origin, from_phone_number, to_phone_number, telephony_call_sid from conversations where id = ${id}`;
  return row;
}

async function leases(node: SipNode): Promise<number> {
  const [{ n }] = await node.server.sql<{ n: number }[]>`select count(*)::int as n from conversation_leases`;
  return n;
}

t.test('answered calls on a node trusting loopback', async (t) => {
  const node = await startSipNode();
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'sales', '+14155550100', {
    audio_format: 'mulaw_8000',
    listen_only_inbound_enabled: true,
    listen_only_inbound_message: 'Hello.',
  });

  t.test(
    'the caller hangs up: call_assigned, 200 with the port, call_start, INFO, hold, BYE to the worker',
    async (t) => {
      const run = await runSipp({
        scenario: 'uac_hangs_up.xml',
        target: `127.0.0.1:${node.sip.port}`,
        service: '+14155550100',
        keys: { caller: '+14155550123' },
      });
      sippCompleted(t, run);
      const assigned = await node.workers.until('call_assigned');
      t.equal(assigned.origin, 'telephony-inbound');
      t.equal(assigned.agent.agent.name, 'sales');
      t.equal(assigned.listenOnly, true, "the agent's listen_only_inbound_enabled travels");
      t.equal(assigned.configurationEndpoint, null);
      t.equal(assigned.overrides, null);
      const ok =
        run.received.find((m) => m.startsWith('SIP/2.0 200 OK') && /Content-Type: application\/sdp/i.test(m)) ?? '';
      t.equal(
        Number(/^m=audio (\d+) /m.exec(ok)?.[1]),
        assigned.rtpPort,
        "the 200 OK's SDP names the allocated RTP port",
      );
      t.equal(assigned.rtpPort % 2, 0, 'an even RTP port');
      t.match(ok, /^c=IN IP4 127\.0\.0\.1$/m);
      t.match(assigned.media, {
        codec: 'PCMU',
        payloadType: 0,
        clockRate: 8000,
        telephoneEventPayloadType: 101,
        ptimeMs: 20,
        direction: 'sendrecv',
      });
      t.equal(assigned.remote?.address, '127.0.0.1');
      t.same(
        { from: assigned.callInfo.from_phone_number, to: assigned.callInfo.to_phone_number },
        { from: '+14155550123', to: '+14155550100' },
      );
      const callId = /^Call-ID: (.+)$/m.exec(ok)?.[1]?.trim();
      t.equal(assigned.callInfo.telephony_call_sid, callId, 'the SIP Call-ID is the telephony_call_sid');
      await node.workers.until('call_start', (m) => m.callId === assigned.callId);
      const dtmf = await node.workers.until('call_dtmf', (m) => m.callId === assigned.callId);
      t.equal(dtmf.digits, '5', 'the INFO digit reached the worker');
      const hold = await node.workers.until('call_media_update', (m) => m.callId === assigned.callId);
      t.equal(
        hold.media.direction,
        'sendonly',
        "the caller's hold reaches the worker as the caller states it (sendonly)",
      );
      t.equal(hold.media.codec, 'PCMU');
      await node.workers.until('call_hangup', (m) => m.callId === assigned.callId && m.reason === 'bye');
      await until(() => node.sip.activeCalls === 0, 'the call released');
      const row = await conversation(node, assigned.conversationId);
      t.match(row, {
        state: 'ended',
        ended_by: 'user',
        origin: 'telephony-inbound',
        from_phone_number: '+14155550123',
        to_phone_number: '+14155550100',
      });
      t.equal(row?.telephony_call_sid, assigned.callInfo.telephony_call_sid);
      t.equal(await leases(node), 0, 'the lease is freed');
    },
  );

  t.test('the worker ends the call: main sends BYE, the port is freed', async (t) => {
    const before = node.workers.of('call_assigned').length;
    const caller = runSipp({
      scenario: 'uac_wait_bye.xml',
      target: `127.0.0.1:${node.sip.port}`,
      service: '+14155550100',
    });
    const assigned = await node.workers.until(
      'call_assigned',
      (m) => node.workers.of('call_assigned').indexOf(m) >= before,
    );
    t.equal(assigned.callInfo.from_phone_number, 'anonymous', 'a From user that is not a number is anonymous');
    await node.workers.until('call_start', (m) => m.callId === assigned.callId);
    await until(
      () =>
        node.sip.ua.dialogs.size > 0 &&
        [...node.sip.ua.dialogs.values()].some((d) => !d.awaitingAck && d.state === 'confirmed'),
      'the ACK',
    );
    await node.workers.end(assigned.callId, 'assistant');
    const run = await caller;
    sippCompleted(t, run, 'the caller got BYE and answered it');
    await until(() => node.sip.activeCalls === 0, 'the call released');
    t.match(await conversation(node, assigned.conversationId), { state: 'ended', ended_by: 'assistant' });
    t.equal(await leases(node), 0);
  });

  t.test(
    "an INVITE without SDP: the offer in the 200 (the agent's codec alone), the answer from the ACK to the worker",
    async (t) => {
      const before = node.workers.of('call_assigned').length;
      const caller = runSipp({
        scenario: 'uac_late_offer.xml',
        target: `127.0.0.1:${node.sip.port}`,
        service: '+14155550100',
      });
      const assigned = await node.workers.until(
        'call_assigned',
        (m) => node.workers.of('call_assigned').indexOf(m) >= before,
      );
      t.equal(assigned.remote, null, 'no remote address before the answer');
      t.match(assigned.media, { codec: 'PCMU', payloadType: 0, telephoneEventPayloadType: 101 });
      const update = await node.workers.until('call_media_update', (m) => m.callId === assigned.callId);
      t.equal(update.remote?.address, '127.0.0.1', "the ACK's answer names where to send");
      t.equal(update.media.codec, 'PCMU');
      await node.workers.end(assigned.callId);
      const run = await caller;
      sippCompleted(t, run, 'the caller got its BYE');
      const ok = run.received.find((m) => m.startsWith('SIP/2.0 200 OK')) ?? '';
      t.match(ok, /^m=audio \d+ RTP\/AVP 0 101$/m, 'the offer in the 200 has PCMU alone, with telephone-event');
      await until(() => node.sip.activeCalls === 0, 'the call released');
    },
  );

  t.test('CANCEL while the worker binds the ports: 487, call_hangup cancel, no record, no lease', async (t) => {
    node.workers.mediaAnswer = () => 'held';
    t.teardown(() => {
      node.workers.mediaAnswer = () => ({ ok: true });
    });
    const before = node.workers.of('call_assigned').length;
    const caller = runSipp({
      scenario: 'uac_cancel.xml',
      target: `127.0.0.1:${node.sip.port}`,
      service: '+14155550100',
    });
    const assigned = await node.workers.until(
      'call_assigned',
      (m) => node.workers.of('call_assigned').indexOf(m) >= before,
    );
    const run = await caller;
    sippCompleted(t, run, 'the caller got 200 to its CANCEL and 487 to its INVITE');
    t.same(
      run.statuses.filter((s) => s >= 200),
      [200, 487],
    );
    node.workers.answerMedia(assigned.callId);
    const hangup = await node.workers.until('call_hangup', (m) => m.callId === assigned.callId);
    t.equal(hangup.reason, 'cancel');
    t.notOk(
      node.workers.of('call_start').some((m) => m.callId === assigned.callId),
      'the call never started',
    );
    await until(() => node.sip.activeCalls === 0, 'the call released');
    t.equal(await conversation(node, assigned.conversationId), undefined, 'no record');
    t.equal(await leases(node), 0, 'the lease is released');
  });

  t.test('a worker that cannot bind twice: 503 with Retry-After, nothing held', async (t) => {
    node.workers.mediaAnswer = () => ({ ok: false, error: 'EADDRINUSE' });
    t.teardown(() => {
      node.workers.mediaAnswer = () => ({ ok: true });
    });
    const before = node.workers.of('call_assigned').length;
    const run = await runSipp({
      scenario: 'uac_refused.xml',
      target: `127.0.0.1:${node.sip.port}`,
      service: '+14155550100',
      keys: { pt: '0', rtpmap: '0 PCMU/8000' },
    });
    const tried = node.workers.of('call_assigned').slice(before);
    t.equal(tried.length, 2, 'a second port was tried');
    t.not(tried[0]?.rtpPort, tried[1]?.rtpPort);
    const final = run.received.find((m) => m.startsWith('SIP/2.0 503')) ?? '';
    t.ok(final, 'refused with 503');
    t.ok(Number(headerOf(final, 'Retry-After')) >= 1);
    t.equal(node.sip.activeCalls, 0);
    t.equal(await leases(node), 0);
  });
});

t.test('a trunk with digest: 401, then the answered INVITE is taken', async (t) => {
  const node = await startSipNode({
    trunks: [
      inboundTrunk('carrier', ['127.0.0.1'], { auth: { realm: 'parley', username: 'parley', password: 's3cret' } }),
    ],
  });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'sales', '+14155550100');
  const run = await runSipp({
    scenario: 'uac_digest.xml',
    target: `127.0.0.1:${node.sip.port}`,
    service: '+14155550100',
  });
  sippCompleted(t, run);
  t.same(
    run.statuses.filter((s) => s >= 200),
    [401, 200, 200],
    '401, the call answered, its BYE answered',
  );
  t.match(
    headerOf(run.received.find((m) => m.startsWith('SIP/2.0 401')) ?? '', 'WWW-Authenticate'),
    /^Digest realm="parley"/,
  );
  const assigned = await node.workers.until('call_assigned');
  t.equal(assigned.callInfo.to_phone_number, '+14155550100', 'the number from To (the Request-URI has no user part)');
  await node.workers.until('call_hangup', (m) => m.callId === assigned.callId && m.reason === 'bye');
});
