// A cold transfer with real peers: baresip A calls Parley, the agent's transfer tool (keep_listening false, no
// digits) hands A to baresip B by SIP REFER; A calls B, Parley reads the NOTIFY sipfrag 200 and hangs up its leg; the
// record ends `assistant` with the transfer (method refer) on the tool call. Then the same with a trunk refusing
// REFER: the transfer is bridged through Parley, and each party hears the other (a tone each way).
import dgram from 'node:dgram';
import t from 'tap';
import { until } from '../helpers/wait.js';
import {
  AGENT_NUMBER,
  CALLER_NUMBER,
  startBaresipPeer,
  startTransferNode,
  TARGET_NUMBER,
  toneShare,
  toneWav,
  transferCall,
} from './transfer-node.js';
import { tempDir } from '../sip/peers/peers.js';
import { headerOf, runSipp, sippCompleted, startSippCallee } from './sipp-scenario.js';

t.setTimeout(180_000);

const CALLER_HZ = 440;
const TARGET_HZ = 1000;
const COLD = { keep_listening: false, use_agent_phone_number: false };

t.test('REFER: the caller is handed to the target, the record ends with the transfer', async (t) => {
  const dir = tempDir('transfer-refer');
  const b = await startBaresipPeer(TARGET_NUMBER, toneWav(dir, 'b.wav', TARGET_HZ, 40));
  t.teardown(() => b.stop());
  const a = await startBaresipPeer(CALLER_NUMBER, toneWav(dir, 'a.wav', CALLER_HZ, 40));
  t.teardown(() => a.stop());
  const n = await startTransferNode({
    allowRefer: true,
    targetPort: b.sipPort,
    tool: COLD,
    say: 'Let me transfer you.',
  });
  t.teardown(() => n.close());

  await a.ctl.command('dial', `sip:${AGENT_NUMBER}@127.0.0.1:${n.sipPort}`);
  // A's second call (to B, as the REFER asked) is answered by B.
  await b.ctl.waitEvent('CALL_ESTABLISHED', 30_000);
  const conv = await n.endedConversation();
  t.equal(conv.ended_by, 'assistant', "the agent's part ended with the transfer");
  const call = transferCall(conv);
  t.ok(call, 'the record has the transfer tool call');
  t.equal(call?.response_body?.outcome, 'transferred');
  t.equal(call?.response_body?.method, 'refer', 'handed over by REFER');
  t.equal(call?.response_body?.phone_number, TARGET_NUMBER);
  t.match(
    n.node.output(),
    /"referTo":"sip:\+15550001111@127\.0\.0\.1:\d+","status":202,"msg":"REFER accepted"/,
    'REFER to the number at the trunk host, accepted',
  );
  // A's leg with Parley is hung up (RFC 5589): A still talks to B.
  await until(() => a.ctl.events.filter((e) => e.type === 'CALL_CLOSED').length >= 1, {
    timeoutMs: 10_000,
    what: "Parley's BYE to A",
  });
  t.equal(b.ctl.events.filter((e) => e.type === 'CALL_CLOSED').length, 0, 'A and B stay connected');
});

t.test('a trunk refusing REFER: bridged, both parties hear each other across µ-law and A-law', async (t) => {
  const dir = tempDir('transfer-bridge');
  // Tones from the start: the agent's welcome (not interruptible) and its transfer (uninterruptible) run through them.
  // The caller talks PCMU, the target only PCMA: the relay converts.
  const b = await startBaresipPeer(TARGET_NUMBER, toneWav(dir, 'b.wav', TARGET_HZ, 60), 'PCMA');
  t.teardown(() => b.stop());
  const a = await startBaresipPeer(CALLER_NUMBER, toneWav(dir, 'a.wav', CALLER_HZ, 60));
  t.teardown(() => a.stop());
  const n = await startTransferNode({ allowRefer: false, targetPort: b.sipPort, tool: COLD });
  t.teardown(() => n.close());

  await a.ctl.command('dial', `sip:${AGENT_NUMBER}@127.0.0.1:${n.sipPort}`);
  await b.ctl.waitEvent('CALL_ESTABLISHED', 30_000);
  t.match(n.node.output(), /does not allow REFER/, 'REFER ruled out by the trunk');
  await n.node.waitFor(/"msg":"transfer bridged"/);
  t.match(n.node.output(), /"codec":"PCMA"[^\n]*"msg":"transfer bridged"/, 'the target answered PCMA');
  // Let both directions run a few seconds, then the target hangs up.
  await new Promise((r) => setTimeout(r, 4000));
  await b.ctl.command('hangup');
  const conv = await n.endedConversation();
  t.equal(conv.ended_by, 'assistant', "the bridge ended: the agent's part is over");
  const call = transferCall(conv);
  t.equal(call?.response_body?.outcome, 'transferred');
  t.equal(call?.response_body?.method, 'bridge');
  t.equal(call?.response_body?.ended_by_party, 'target');
  t.match(call?.response_body?.refer_refused, /allow_refer/, 'the record says why REFER was not used');
  t.ok(
    call?.response_body?.bridge_duration_sec >= 3,
    `bridge duration recorded (${call?.response_body?.bridge_duration_sec} s)`,
  );
  const [, counters] = /"leg":(\{[^}]*\})/.exec(n.node.output()) ?? [];
  const leg = JSON.parse(counters ?? '{}');
  t.ok(leg.relayedToTarget > 100, `caller's audio relayed to the target (${leg.relayedToTarget} frames)`);
  t.ok(leg.relayedToCaller > 100, `target's audio relayed to the caller (${leg.relayedToCaller} frames)`);
  await until(() => a.ctl.events.some((e) => e.type === 'CALL_CLOSED'), {
    timeoutMs: 10_000,
    what: "Parley's BYE to A",
  });
  await a.stop();
  await b.stop();
  const heardByTarget = b.heard()[0] ?? new Int16Array(0);
  const heardByCaller = a.heard()[0] ?? new Int16Array(0);
  t.ok(
    toneShare(heardByTarget.subarray(8000), CALLER_HZ) > 0.3,
    `the target heard the caller's tone (${toneShare(heardByTarget.subarray(8000), CALLER_HZ).toFixed(2)})`,
  );
  const lastSecs = heardByCaller.subarray(Math.max(0, heardByCaller.length - 8000 * 4));
  t.ok(
    toneShare(lastSecs, TARGET_HZ) > 0.3,
    `the caller heard the target's tone (${toneShare(lastSecs, TARGET_HZ).toFixed(2)})`,
  );
});

t.test('a caller declining the REFER: the transfer is bridged instead', async (t) => {
  const media = dgram.createSocket('udp4');
  await new Promise<void>((r) => media.bind(0, '127.0.0.1', r));
  t.teardown(() => media.close());
  let toTarget = 0;
  media.on('message', () => toTarget++);
  const target = await startSippCallee({
    scenario: 'uas_transfer_target.xml',
    keys: { rtp_port: `${media.address().port}` },
    pauseMs: 3000,
    timeoutMs: 60_000,
  });
  const n = await startTransferNode({ allowRefer: true, targetPort: target.port, tool: COLD });
  t.teardown(() => n.close());

  const caller = await runSipp({
    scenario: 'uac_refuses_refer.xml',
    target: `127.0.0.1:${n.sipPort}`,
    service: AGENT_NUMBER,
    timeoutMs: 60_000,
  });
  sippCompleted(t, caller, "the caller declined the REFER, then got Parley's BYE when the target hung up");
  const refer = caller.received.find((m) => m.startsWith('REFER '));
  t.match(
    headerOf(refer ?? '', 'Refer-To'),
    new RegExp(`<sip:\\${TARGET_NUMBER}@127\\.0\\.0\\.1:${target.port}>`),
    'Refer-To: the number at the trunk host',
  );
  t.match(headerOf(refer ?? '', 'Referred-By'), /<sip:\+14155550100@/, "Referred-By: the agent's number");
  const answered = await target.done;
  sippCompleted(t, answered, 'the target answered the bridge and hung up');
  const conv = await n.endedConversation();
  t.equal(conv.ended_by, 'assistant');
  const call = transferCall(conv);
  t.equal(call?.response_body?.method, 'bridge', 'bridged after the REFER was declined');
  t.match(call?.response_body?.refer_refused, /603/, 'the record says the REFER was declined');
  t.ok(toTarget > 50, `the target got the relayed stream (${toTarget} packets)`);
});
