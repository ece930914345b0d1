// detect_voicemail on a bridged transfer, with real peers: baresip calls Parley, the agent's transfer tool dials a
// SIPp target through the outbound trunk, and the target streams a case of the labelled set (test/fixtures/voicemail)
// after answering.
// - a greeting then a beep: an answering machine, treated as no answer: Parley hangs the target up (it gets the BYE)
//   without bridging, the caller is back with the agent (on_transfer_no_answer return_to_assistant), and the tool
//   call's response_body says who answered.
// - "Hello." then silence: a person, bridged; the record says `human`.
import t from 'tap';
import { mulawEncodeInto } from '../../src/media/native/g711.js';
import { loadManifest, renderCase } from '../fixtures/voicemail/labelled-set.js';
import { tempDir } from '../sip/peers/peers.js';
import { sippCompleted, startSippCallee } from './sipp-scenario.js';
import {
  AGENT_NUMBER,
  CALLER_NUMBER,
  startBaresipPeer,
  startTransferNode,
  toneWav,
  transferCall,
} from './transfer-node.js';

t.setTimeout(240_000);

/** A greeting ("Nobody is available...") then a 1000 ms beep at 500 Hz. */
const MACHINE = 'machine-035';
/** "Hello." then silence. */
const HUMAN = 'human-008';

const cases = new Map(loadManifest().cases.map((c) => [c.id, c]));
function ulawOf(id: string): Uint8Array {
  const c = cases.get(id);
  if (!c) throw new Error(`no case ${id} in the labelled set`);
  const pcm = renderCase(c);
  const out = new Uint8Array(pcm.length);
  mulawEncodeInto(pcm, out);
  return out;
}

const assistantSaid = (conv: any): string[] =>
  (conv.items ?? []).filter((i: any) => i.role === 'assistant').map((i: any) => i.live_transcript);

t.test('a target answered by a machine (greeting, beep) is not bridged: hung up, back to the agent', async (t) => {
  const dir = tempDir('transfer-amd-machine');
  const target = await startSippCallee({
    scenario: 'uas_stream_wait_bye.xml',
    files: { 'audio.ul': ulawOf(MACHINE) },
    timeoutMs: 90_000,
  });
  const a = await startBaresipPeer(CALLER_NUMBER, toneWav(dir, 'silence.wav', 0, 90));
  t.teardown(() => a.stop());
  const n = await startTransferNode({
    allowRefer: true,
    targetPort: target.port,
    tool: { keep_listening: true, detect_voicemail: true, on_transfer_no_answer: 'return_to_assistant' },
  });
  t.teardown(() => n.close());

  await a.ctl.command('dial', `sip:${AGENT_NUMBER}@127.0.0.1:${n.sipPort}`);
  sippCompleted(t, await target.done, "the machine got Parley's BYE");
  await n.node.waitFor(/"msg":"transfer settled"/);
  t.notMatch(n.node.output(), /"msg":"transfer bridged"/, 'the machine was never bridged');
  await new Promise((r) => setTimeout(r, 2000));
  await a.ctl.command('hangup');
  const conv = await n.endedConversation();
  t.equal(conv.ended_by, 'user', 'the call went on with the agent until the caller hung up');
  const body = transferCall(conv)?.response_body;
  t.match(body, { outcome: 'no_answer', attempts: 1, reason: /answering machine/ }, JSON.stringify(body));
  t.match(body?.answered_by, { result: 'machine', reason: 'beep' }, 'the record says a machine answered');
  t.ok(body?.answered_by?.beep_at_ms > 0, `the beep's time (${body?.answered_by?.beep_at_ms} ms after the answer)`);
  t.ok(assistantSaid(conv).includes('The transfer did not go through.'), 'the agent, told, spoke to the caller again');
});

t.test('a target answered by a person ("Hello.") is bridged; the record says human', async (t) => {
  const dir = tempDir('transfer-amd-human');
  const target = await startSippCallee({
    scenario: 'uas_stream_wait_bye.xml',
    files: { 'audio.ul': ulawOf(HUMAN) },
    timeoutMs: 90_000,
  });
  const a = await startBaresipPeer(CALLER_NUMBER, toneWav(dir, 'silence.wav', 0, 90));
  t.teardown(() => a.stop());
  const n = await startTransferNode({
    allowRefer: true,
    targetPort: target.port,
    tool: { keep_listening: true, detect_voicemail: true },
  });
  t.teardown(() => n.close());

  await a.ctl.command('dial', `sip:${AGENT_NUMBER}@127.0.0.1:${n.sipPort}`);
  await n.node.waitFor(/"msg":"transfer bridged"/);
  await new Promise((r) => setTimeout(r, 2000));
  await a.ctl.command('hangup');
  sippCompleted(t, await target.done, "the target, bridged, got Parley's BYE when the caller hung up");
  const conv = await n.endedConversation();
  t.equal(conv.ended_by, 'user');
  const body = transferCall(conv)?.response_body;
  t.match(
    body,
    { outcome: 'transferred', method: 'bridge', ended_by_party: 'caller', attempts: 1 },
    JSON.stringify(body),
  );
  t.match(body?.answered_by, { result: 'human', beep_at_ms: null }, 'the record says a person answered');
});
