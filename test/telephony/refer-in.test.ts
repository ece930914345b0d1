// A PBX (SIPp) transferring Parley's call with REFER (RFC 3515), through a whole node in one process (call-node.ts):
// on a trunk with allow_refer, 202, NOTIFYs with sipfrag 100 then 200, the new call reaching a SIPp callee at the
// Refer-To address, the media worker's call given the callee's RTP peer, the old dialog ended with BYE, the
// conversation going on until the callee hangs up, and the record keeping the transfer (metadata.sip_refers).
// On a trunk without allow_refer, 403 and nothing placed.
import t from 'tap';
import { mulawEncodeInto } from '../../src/media/native/g711.js';
import { inboundTrunk, agentWithNumber } from './sip-node.js';
import { startCallNode } from './call-node.js';
import { freeUdpPort, headerOf, runSipp, sippCompleted, startSippCallee } from './sipp-scenario.js';
import { until } from '../helpers/wait.js';
import { createUserAgent } from '../../sip/index.js';

t.setTimeout(180_000);

const OWN = '+14155550100';

/** `ms` of a 440 Hz tone at -20 dBFS, as raw mu-law: what the transfer's callee streams. */
function toneUlaw(ms: number): Uint8Array {
  const pcm = new Int16Array((ms * 8000) / 1000);
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(3277 * Math.sin((2 * Math.PI * 440 * i) / 8000));
  const out = new Uint8Array(pcm.length);
  mulawEncodeInto(pcm, out);
  return out;
}

t.test('a REFER from a trunk with allow_refer transfers the call to the Refer-To target', async (t) => {
  const node = await startCallNode({
    trunks: [inboundTrunk('pbx', ['127.0.0.1'], { allow_refer: true })],
    script: { turns: [], responses: [], word_ms: 250, end_tool: 'natural_conversation_ending' },
  });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'desk', OWN, { audio_format: 'mulaw_8000' });

  const calleePort = await freeUdpPort();
  const callee = await startSippCallee({
    scenario: 'uas_stream_bye.xml',
    port: calleePort,
    files: { 'audio.ul': toneUlaw(2500) },
  });
  const target = `sip:transfer-target@127.0.0.1:${calleePort}`;
  const pbx = await runSipp({
    scenario: 'uac_refer.xml',
    target: `127.0.0.1:${node.sip.port}`,
    service: OWN,
    keys: { refer_to: target },
    timeoutMs: 60_000,
  });
  sippCompleted(t, pbx, 'the PBX got 202, both NOTIFYs and the BYE of its dialog');
  const notifies = pbx.received.filter((m) => m.startsWith('NOTIFY '));
  t.equal(notifies.length, 2, 'two NOTIFYs');
  t.match(headerOf(notifies[0] ?? '', 'Content-Type'), /^message\/sipfrag/, 'a sipfrag body');
  t.match(notifies[0], /\n\nSIP\/2\.0 100 Trying/, 'first: 100 Trying');
  t.match(headerOf(notifies[0] ?? '', 'Event'), /^refer;id=2$/, 'the refer event of CSeq 2');
  t.match(notifies[1], /\n\nSIP\/2\.0 200 OK/, 'then: 200 OK');
  t.match(headerOf(notifies[1] ?? '', 'Subscription-State'), /^terminated/, 'the final NOTIFY ends the subscription');
  t.ok(
    pbx.received.some((m) => m.startsWith('BYE ')),
    'Parley ended the transferred dialog with BYE',
  );

  const run = await callee.done;
  sippCompleted(t, run, 'the callee was called and hung up after its stream');
  const invite = run.received.find((m) => m.startsWith('INVITE ')) ?? '';
  t.match(
    invite,
    new RegExp(`^INVITE sip:transfer-target@127\\.0\\.0\\.1:${calleePort} SIP/2\\.0`),
    'the new call goes to the Refer-To URI',
  );
  t.match(headerOf(invite, 'Referred-By'), /<sip:pbx@127\.0\.0\.1:\d+>/, 'carrying Referred-By');
  t.match(headerOf(invite, 'From'), new RegExp(`<sip:\\${OWN}@127\\.0\\.0\\.1>`), 'from the number the PBX called');
  t.match(invite, /^m=audio \d+ RTP\/AVP 0 101\r?$/m, "offering the call's codec alone, with telephone-event");

  // The media worker's call was given the callee's RTP peer, and the conversation went on with it.
  const updates = node.worker.sent.filter((m) => m.type === 'call_media_update');
  t.ok(updates.length >= 1, 'a media update after the transfer');
  const last = updates[updates.length - 1];
  t.equal(last?.type === 'call_media_update' ? last.remote?.address : null, '127.0.0.1');
  t.not(last?.type === 'call_media_update' ? last.remote?.port : null, null, 'a new RTP peer');

  const [assigned] = node.worker.sent.filter((m) => m.type === 'call_assigned');
  const conversationId = assigned?.type === 'call_assigned' ? assigned.conversationId : '';
  await until(
    async () => {
      const r = await node.client.get(`/v1/conversations/${conversationId}`);
      return r.status === 200 && r.body.conversation?.ended_by != null;
    },
    { what: 'the conversation ended and saved', timeoutMs: 20_000 },
  );
  const record = (await node.client.get(`/v1/conversations/${conversationId}`)).body.conversation;
  t.equal(record.ended_by, 'user', 'it ended when the new party hung up');
  // The PBX sends no RTP: what the call received is the new party's stream.
  t.ok(
    record.analysis?.rtp?.inbound?.packets_received > 50,
    `the call took the new party's RTP (${record.analysis?.rtp?.inbound?.packets_received} packets)`,
  );
  const refers = record.metadata?.sip_refers as Record<string, unknown>[] | undefined;
  t.equal(refers?.length, 1, 'one transfer recorded');
  t.match(refers?.[0], { refer_to: target, route: 'direct', status: 200, reason: 'OK' });
  t.match(refers?.[0]?.referred_by, /sip:pbx@127\.0\.0\.1/);
  t.type(refers?.[0]?.call_id, 'string', "the new call's Call-ID");
  t.equal(record.call_info.telephony_call_sid?.length > 0, true, "the original Call-ID stays the record's");
  await until(() => node.sip.activeCalls === 0, { what: 'the call released' });
});

t.test('a REFER from a trunk without allow_refer is refused with 403', async (t) => {
  const node = await startCallNode({
    trunks: [inboundTrunk('pbx', ['127.0.0.1'], { allow_refer: false })],
    script: { turns: [], responses: [], word_ms: 250, end_tool: 'natural_conversation_ending' },
  });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'desk', OWN, { audio_format: 'mulaw_8000' });
  const unused = await freeUdpPort();
  const pbx = await runSipp({
    scenario: 'uac_refer_refused.xml',
    target: `127.0.0.1:${node.sip.port}`,
    service: OWN,
    keys: { refer_to: `sip:transfer-target@127.0.0.1:${unused}` },
    timeoutMs: 30_000,
  });
  sippCompleted(t, pbx, 'the PBX got 403 and hung up');
  const refused = pbx.received.find((m) => m.startsWith('SIP/2.0 403'));
  t.match(headerOf(refused ?? '', 'Warning'), /allow_refer/, 'the Warning says why');
  t.notOk(
    pbx.received.some((m) => m.startsWith('NOTIFY ')),
    'no NOTIFY',
  );
  t.equal(node.worker.sent.filter((m) => m.type === 'call_media_update').length, 0, "the call's media was not moved");
  const [assigned] = node.worker.sent.filter((m) => m.type === 'call_assigned');
  const conversationId = assigned?.type === 'call_assigned' ? assigned.conversationId : '';
  let seen = '';
  await until(
    async () => {
      const r = await node.client.get(`/v1/conversations/${conversationId}`);
      seen = `${r.status} ${r.body.conversation?.ended_by} ${node.sip.activeCalls} ${node.worker.calls.count}`;
      return r.body.conversation?.ended_by != null;
    },
    { what: () => `the conversation saved (${seen})` },
  );
  const record = (await node.client.get(`/v1/conversations/${conversationId}`)).body.conversation;
  t.equal(record.metadata ?? null, null, 'no transfer recorded');
});

t.test('a REFER to a number is called through the outbound trunk', async (t) => {
  const calleePort = await freeUdpPort();
  const node = await startCallNode({
    trunks: [
      inboundTrunk('pbx', ['127.0.0.1'], { allow_refer: true }),
      {
        name: 'carrier',
        inbound: null,
        outbound: { uri: `sip:127.0.0.1:${calleePort}`, transport: null, auth: null, caller_id: null },
      },
    ],
    script: { turns: [], responses: [], word_ms: 250, end_tool: 'natural_conversation_ending' },
  });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'desk', OWN, { audio_format: 'mulaw_8000' });
  const callee = await startSippCallee({
    scenario: 'uas_stream_bye.xml',
    port: calleePort,
    files: { 'audio.ul': toneUlaw(500) },
  });
  const pbx = await runSipp({
    scenario: 'uac_refer.xml',
    target: `127.0.0.1:${node.sip.port}`,
    service: OWN,
    keys: { refer_to: 'tel:+14155550199' },
    timeoutMs: 60_000,
  });
  sippCompleted(t, pbx, 'the PBX got 202, both NOTIFYs and the BYE');
  t.match(pbx.received.filter((m) => m.startsWith('NOTIFY '))[1], /\n\nSIP\/2\.0 200 OK/, 'the final NOTIFY: 200 OK');
  const run = await callee.done;
  sippCompleted(t, run, "the trunk's callee was called");
  t.match(
    run.received.find((m) => m.startsWith('INVITE ')),
    new RegExp(`^INVITE sip:\\+14155550199@127\\.0\\.0\\.1:${calleePort} SIP/2\\.0`),
    "the number at the trunk's host",
  );
  const [assigned] = node.worker.sent.filter((m) => m.type === 'call_assigned');
  const conversationId = assigned?.type === 'call_assigned' ? assigned.conversationId : '';
  let record: Record<string, any> = {};
  await until(
    async () => {
      record = (await node.client.get(`/v1/conversations/${conversationId}`)).body.conversation;
      return record?.ended_by != null;
    },
    { what: 'the record finished', timeoutMs: 20_000 },
  );
  t.match(record.metadata?.sip_refers, [
    { refer_to: `sip:+14155550199@127.0.0.1:${calleePort}`, route: 'outbound_trunk', status: 200 },
  ]);
});

t.test(
  'REFERs Parley does not carry out are refused before the 202; a busy target is reported; the call goes on',
  async (t) => {
    const node = await startCallNode({
      trunks: [inboundTrunk('pbx', ['127.0.0.1'], { allow_refer: true })],
      script: { turns: [], responses: [], word_ms: 250, end_tool: 'natural_conversation_ending' },
    });
    t.teardown(() => node.close());
    await agentWithNumber(node.client, 'desk', OWN, { audio_format: 'mulaw_8000' });
    // The PBX: a user agent of the SIP library calling the agent's number.
    const pbx = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp'] });
    t.teardown(() => pbx.close());
    const mediaPort = await freeUdpPort();
    const dialog = await pbx.createUAC(`sip:${OWN}@127.0.0.1:${node.sip.port}`, {
      media: {
        address: '127.0.0.1',
        port: mediaPort,
        codecs: ['PCMU'],
        telephoneEvent: true,
        ptimeMs: 20,
        direction: 'sendrecv',
      },
    });
    await until(() => node.worker.sent.some((m) => m.type === 'call_start'), { what: 'the call started' });
    const cases: [string, number, RegExp][] = [
      ['mailto:desk@example.com', 416, /sip: or tel:/],
      [`sip:desk@127.0.0.1:${mediaPort}?Replaces=abc%40pbx%3Bto-tag%3D1%3Bfrom-tag%3D2`, 501, /Replaces/],
      [`sip:desk@127.0.0.1:${mediaPort};method=BYE`, 501, /INVITE/],
      ['sip:desk@pbx.example.com', 403, /neither a trusted address nor a telephone number/],
      ['sip:desk@192.0.2.7', 403, /neither a trusted address nor a telephone number/],
      ['tel:+14155550199', 403, /no outbound trunk/],
      // this node itself, though on a trusted address: the conversation would be transferred to a new one of its own
      [`sip:${OWN}@127.0.0.1:${node.sip.port}`, 403, /this node/],
      [`sip:${OWN}@[::ffff:127.0.0.1]:${node.sip.port}`, 403, /this node/],
    ];
    for (const [target, status, warning] of cases) {
      const res = await dialog.refer(target);
      t.equal(res.status, status, `${target}: ${res.status} ${res.reason}`);
      t.match(res.headers.get('Warning'), warning, 'the Warning says why');
    }
    t.equal(node.worker.sent.filter((m) => m.type === 'call_media_update').length, 0, "the call's media untouched");

    // Accepted, but the target is busy: the final NOTIFY says so and the call stays where it was.
    const busyPort = await freeUdpPort();
    const busy = await startSippCallee({ scenario: 'uas_busy.xml', port: busyPort });
    const progress: string[] = [];
    dialog.on('notify', (n) => progress.push(`${n.sipfrag?.status} ${n.subscriptionState?.state}`));
    const accepted = await dialog.refer(`sip:busy@127.0.0.1:${busyPort}`);
    t.equal(accepted.status, 202);
    await until(() => progress.length === 2, { what: 'two NOTIFYs' });
    t.same(progress, ['100 active', '486 terminated'], "Trying, then the target's refusal");
    sippCompleted(t, await busy.done, 'the target was called');
    t.equal(node.worker.sent.filter((m) => m.type === 'call_media_update').length, 0, "the call's media untouched");
    t.equal(dialog.state, 'confirmed', 'the call goes on');
    await until(
      async () => {
        const [a] = node.worker.sent.filter((m) => m.type === 'call_assigned');
        const id = a?.type === 'call_assigned' ? a.conversationId : '';
        return (
          (await node.client.get(`/v1/conversations/${id}`)).body.conversation?.metadata?.sip_refers?.[0]?.status ===
          486
        );
      },
      { what: 'the failed transfer recorded' },
    );
    await dialog.bye();
    await until(() => node.sip.activeCalls === 0, { what: 'the call released' });
  },
);
