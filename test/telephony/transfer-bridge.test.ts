// Bridged transfers with real peers: baresip calls Parley and the agent's transfer tool dials a target through the
// outbound trunk.
// - digits (dtmf): the target (SIPp, its media at a socket of the test) gets them as RFC 4733 events after the
//   answer, then the caller's audio; the From of its INVITE is the caller's number (use_agent_phone_number false).
// - keep_listening with post_transfer_message: both parties (baresip each, silent microphones) hear it; when the
//   target hangs up, the caller is back with the agent.
// - a target that never answers: with keep_retrying it is dialled up to the cap, then the caller is back with the
//   agent, which is told.
// - the caller hanging up a bridge the agent left: Parley hangs up the target, the record ends `user`.
import dgram from 'node:dgram';
import t from 'tap';
import { createRtpPacketView, decodeView } from '../../src/media/rtp.js';
import { dtmfDigit } from '../../src/media/rfc4733.js';
import { TRANSFER_DEFAULTS } from '../../src/telephony/transfer.js';
import { tempDir } from '../sip/peers/peers.js';
import { headerOf, startSippCallee } from './sipp-scenario.js';
import {
  AGENT_NUMBER,
  CALLER_NUMBER,
  rms,
  startBaresipPeer,
  startTransferNode,
  TARGET_NUMBER,
  toneWav,
  transferCall,
} from './transfer-node.js';

t.setTimeout(180_000);

const PT_EVENT = 101;
const PT_PCMU = 0;

t.test("dtmf: the digits reach the target as RFC 4733 events after the answer, then the caller's audio", async (t) => {
  const dir = tempDir('transfer-dtmf');
  const media = dgram.createSocket('udp4');
  await new Promise<void>((r) => media.bind(0, '127.0.0.1', r));
  t.teardown(() => media.close());
  const packets: Buffer[] = [];
  media.on('message', (m) => packets.push(m));
  const target = await startSippCallee({
    scenario: 'uas_transfer_target.xml',
    keys: { rtp_port: `${media.address().port}` },
    pauseMs: 5000,
    timeoutMs: 60_000,
  });
  const a = await startBaresipPeer(CALLER_NUMBER, toneWav(dir, 'a.wav', 440, 60));
  t.teardown(() => a.stop());
  const n = await startTransferNode({
    allowRefer: true,
    targetPort: target.port,
    tool: { keep_listening: false, use_agent_phone_number: false, dtmf: '12w#' },
  });
  t.teardown(() => n.close());

  await a.ctl.command('dial', `sip:${AGENT_NUMBER}@127.0.0.1:${n.sipPort}`);
  const run = await target.done;
  t.equal(run.code, 0, 'SIPp answered, stayed, hung up', { output: run.output.slice(-2000) });
  const invite = run.received.find((m) => m.startsWith('INVITE '));
  t.match(headerOf(invite ?? '', 'From'), /sip:\+14155550123@/, "the new leg presents the caller's number");
  t.notMatch(n.node.output(), /REFER accepted/, 'digits: bridged, no REFER');

  const view = createRtpPacketView();
  const digits: string[] = [];
  let lastTs = -1;
  let firstAudioAfterDigits = -1;
  packets.forEach((p, i) => {
    if (decodeView(p, view, p.length) !== 'ok') return;
    if (view.payloadType === PT_EVENT) {
      if (view.timestamp !== lastTs) digits.push(dtmfDigit(p[view.payloadOffset]) ?? '?');
      lastTs = view.timestamp;
    } else if (view.payloadType === PT_PCMU && digits.length === 3 && firstAudioAfterDigits < 0)
      firstAudioAfterDigits = i;
  });
  t.same(digits, ['1', '2', '#'], 'the digits, in order, as RFC 4733 events (the w a pause)');
  t.ok(firstAudioAfterDigits > 0, "the caller's audio follows the digits");
  const conv = await n.endedConversation();
  t.equal(conv.ended_by, 'assistant', 'the target hung up: the record ends');
  const call = transferCall(conv);
  t.equal(call?.response_body?.method, 'bridge', 'digits: bridged');
  t.ok(call?.response_body?.bridge_duration_sec >= 4, `bridge duration ${call?.response_body?.bridge_duration_sec} s`);
});

t.test(
  'keep_listening: the post-transfer message is heard by both parties; the caller returns when the target leaves',
  async (t) => {
    const dir = tempDir('transfer-listen');
    const silent = toneWav(dir, 'silence.wav', 0, 60);
    const b = await startBaresipPeer(TARGET_NUMBER, silent);
    t.teardown(() => b.stop());
    const a = await startBaresipPeer(CALLER_NUMBER, silent);
    t.teardown(() => a.stop());
    const message = 'You are now connected to the front desk.';
    const n = await startTransferNode({
      allowRefer: true,
      targetPort: b.sipPort,
      tool: { keep_listening: true, post_transfer_message: message },
      after: 'Welcome back.',
    });
    t.teardown(() => n.close());

    await a.ctl.command('dial', `sip:${AGENT_NUMBER}@127.0.0.1:${n.sipPort}`);
    const answered = await b.ctl.waitEvent('CALL_ESTABLISHED', 30_000);
    t.match(
      String(answered.peeruri ?? answered.param ?? ''),
      /\+14155550100/,
      "the new leg presents the agent's number",
    );
    await n.node.waitFor(/"msg":"transfer bridged"/);
    // The message (espeak, about 2.5 s) plays into the bridge; then the target hangs up.
    await new Promise((r) => setTimeout(r, 5000));
    await b.ctl.command('hangup');
    await n.node.waitFor(/"msg":"transfer settled"/);
    // Back with the agent, which answers the tool's output; then the caller hangs up.
    await new Promise((r) => setTimeout(r, 3000));
    await a.ctl.command('hangup');
    const conv = await n.endedConversation();
    t.equal(conv.ended_by, 'user', 'the caller ended the call after returning to the agent');
    const call = transferCall(conv);
    t.equal(call?.response_body?.outcome, 'bridge_ended', 'the agent listened until the target hung up');
    t.equal(call?.response_body?.ended_by_party, 'target');
    t.ok(
      call?.response_body?.bridge_duration_sec >= 4,
      `bridge duration ${call?.response_body?.bridge_duration_sec} s`,
    );
    const said = (conv.items ?? []).filter((i: any) => i.role === 'assistant').map((i: any) => i.live_transcript);
    t.ok(said.includes(message), `the message is in the record (${JSON.stringify(said)})`);
    t.ok(said.includes('Welcome back.'), 'the agent spoke again once the caller was back');
    await a.stop();
    await b.stop();
    const heardByTarget = b.heard()[0] ?? new Int16Array(0);
    const heardByCaller = a.heard()[0] ?? new Int16Array(0);
    // The microphones are silent: what either heard is the agent. The target heard only the message; the caller's
    // first 4 s are the bridge's (the agent said nothing before it, and "Welcome back" came 5 s into it at the earliest).
    const callerDuringBridge = heardByCaller.subarray(0, 8000 * 4);
    t.ok(rms(heardByTarget) > 100, `the target heard the message (rms ${rms(heardByTarget).toFixed(0)})`);
    t.ok(rms(callerDuringBridge) > 100, `the caller heard the message (rms ${rms(callerDuringBridge).toFixed(0)})`);
  },
);

t.test('no answer with keep_retrying: dialled up to the cap, then the caller is back with the agent', async (t) => {
  const dir = tempDir('transfer-noanswer');
  const target = await startSippCallee({
    scenario: 'uas_ring_forever.xml',
    calls: TRANSFER_DEFAULTS.max_attempts,
    timeoutMs: 90_000,
  });
  const a = await startBaresipPeer(CALLER_NUMBER, toneWav(dir, 'silence.wav', 0, 90));
  t.teardown(() => a.stop());
  const n = await startTransferNode({
    allowRefer: true,
    targetPort: target.port,
    tool: { keep_listening: true, on_transfer_no_answer: 'keep_retrying' },
    env: { PARLEY_RING_TIMEOUT_SEC: '2' },
  });
  t.teardown(() => n.close());

  await a.ctl.command('dial', `sip:${AGENT_NUMBER}@127.0.0.1:${n.sipPort}`);
  const run = await target.done;
  t.equal(run.code, 0, `SIPp rang ${TRANSFER_DEFAULTS.max_attempts} times and was cancelled each time`, {
    output: run.output.slice(-2000),
  });
  t.equal(
    run.received.filter((m) => m.startsWith('CANCEL ')).length,
    TRANSFER_DEFAULTS.max_attempts,
    'each dial cancelled at the ring timeout',
  );
  await n.node.waitFor(/"msg":"transfer settled"/);
  await new Promise((r) => setTimeout(r, 2000));
  await a.ctl.command('hangup');
  const conv = await n.endedConversation();
  t.equal(conv.ended_by, 'user', 'the call went on with the agent until the caller hung up');
  const call = transferCall(conv);
  t.equal(call?.response_body?.outcome, 'no_answer');
  t.equal(call?.response_body?.attempts, TRANSFER_DEFAULTS.max_attempts, 'every attempt made');
  const said = (conv.items ?? []).filter((i: any) => i.role === 'assistant').map((i: any) => i.live_transcript);
  t.ok(said.includes('The transfer did not go through.'), 'the agent, told, spoke to the caller again');
});

t.test('the caller hangs up a bridge the agent left: the target is hung up, the record ends `user`', async (t) => {
  const dir = tempDir('transfer-caller-bye');
  const b = await startBaresipPeer(TARGET_NUMBER, toneWav(dir, 'b.wav', 1000, 60));
  t.teardown(() => b.stop());
  const a = await startBaresipPeer(CALLER_NUMBER, toneWav(dir, 'a.wav', 440, 60));
  t.teardown(() => a.stop());
  const n = await startTransferNode({
    allowRefer: false,
    targetPort: b.sipPort,
    tool: { keep_listening: false, use_agent_phone_number: false },
  });
  t.teardown(() => n.close());

  await a.ctl.command('dial', `sip:${AGENT_NUMBER}@127.0.0.1:${n.sipPort}`);
  await b.ctl.waitEvent('CALL_ESTABLISHED', 30_000);
  await n.node.waitFor(/"msg":"transfer bridged"/);
  await new Promise((r) => setTimeout(r, 2000));
  await a.ctl.command('hangup');
  await b.ctl.waitEvent('CALL_CLOSED', 10_000);
  t.pass('Parley hung up the target');
  const conv = await n.endedConversation();
  t.equal(conv.ended_by, 'user', 'the caller ended it');
  const call = transferCall(conv);
  t.match(call?.response_body, { outcome: 'transferred', method: 'bridge', ended_by_party: 'caller' });
  t.ok(
    call?.response_body?.bridge_duration_sec >= 1.5,
    `bridge duration ${call?.response_body?.bridge_duration_sec} s`,
  );
});
