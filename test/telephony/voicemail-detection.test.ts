// Answering-machine detection on outbound calls, end to end through a whole node in one process (call-node.ts):
// SIPp callees stream a case of the labelled set (test/fixtures/voicemail) after answering: a greeting then a beep
// is `machine` with the beep's time, a short hello then silence is `human`. The engine is told the outcome (a system
// message) before the conversation first speaks, and the record keeps it (metadata.answering_machine). Also the
// entry point a bridged transfer's leg uses, detectVoicemail(), on the same cases' frames.
import t from 'tap';
import { mulawEncodeInto } from '../../src/media/native/g711.js';
import { detectVoicemail } from '../../src/telephony/voicemail-detection.js';
import type { Trunk } from '../../src/telephony/trunks.js';
import { loadManifest, renderCase } from '../fixtures/voicemail/labelled-set.js';
import { until } from '../helpers/wait.js';
import { startCallNode, type CallNode } from './call-node.js';
import { agentWithNumber } from './sip-node.js';
import { freeUdpPort, sippCompleted, startSippCallee } from './sipp-scenario.js';

t.setTimeout(240_000);

const TO = '+14155550123';
const OWN = '+14155550100';
const FRAME = 160;
/** A greeting ("Nobody is available...") then a 1000 ms beep at 500 Hz. */
const MACHINE = 'machine-035';
/** "Hello." then silence. */
const HUMAN = 'human-008';

const cases = new Map(loadManifest().cases.map((c) => [c.id, c]));
function caseOf(id: string) {
  const c = cases.get(id);
  if (!c) throw new Error(`no case ${id} in the labelled set`);
  return c;
}

function ulaw(pcm: Int16Array): Uint8Array {
  const out = new Uint8Array(pcm.length);
  mulawEncodeInto(pcm, out);
  return out;
}

async function* framesOf(pcm: Int16Array): AsyncGenerator<Int16Array> {
  for (let i = 0; i + FRAME <= pcm.length; i += FRAME) yield pcm.subarray(i, i + FRAME);
}

t.test("detectVoicemail: the entry point for a leg's decoded frames", async (t) => {
  const machine = caseOf(MACHINE);
  const m = await detectVoicemail(framesOf(renderCase(machine)));
  t.equal(m.result, 'machine');
  t.equal(m.reason, 'beep', 'settled by the beep');
  t.ok(
    Math.abs((m.beep_at_ms ?? 0) - machine.truth.beepStartMs!) < 100,
    `the beep's start (${m.beep_at_ms} ms, truth ${machine.truth.beepStartMs})`,
  );
  t.ok((m.beep_end_ms ?? 0) > (m.beep_at_ms ?? 0), 'and its end');

  const h = await detectVoicemail(framesOf(renderCase(caseOf(HUMAN))));
  t.match(h, { result: 'human', beep_at_ms: null });

  const short = await detectVoicemail(framesOf(renderCase(machine).subarray(0, 8000)));
  t.match(short, { result: 'unknown', reason: 'cancelled' }, 'audio that ends before a decision settles unknown');

  const failing = (async function* () {
    yield new Int16Array(FRAME);
    throw new Error('the leg went away');
  })();
  await t.rejects(detectVoicemail(failing), /the leg went away/, "the frames' own failure");
});

const outboundTrunk = (port: number): Trunk => ({
  name: 'carrier',
  inbound: null,
  outbound: { uri: `sip:127.0.0.1:${port}`, transport: null, auth: null, caller_id: null },
});

async function recordOf(node: CallNode, id: string): Promise<Record<string, any>> {
  let record: Record<string, any> = {};
  await until(
    async () => {
      record = (await node.client.get(`/v1/conversations/${id}`)).body.conversation;
      return record?.ended_by != null;
    },
    { what: 'the record finished', timeoutMs: 30_000 },
  );
  return record;
}

t.test('outbound calls: who answered reaches the engine before it speaks, and the record', async (t) => {
  const calleePort = await freeUdpPort();
  const node = await startCallNode({
    trunks: [outboundTrunk(calleePort)],
    // The generated welcome: one line, then the conversation ends.
    script: {
      turns: [],
      responses: [{ say: 'Hi, this is Parley calling back about your order.', tool_calls: [], end: true }],
      word_ms: 250,
      end_tool: 'natural_conversation_ending',
    },
  });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'caller', OWN, {
    audio_format: 'mulaw_8000',
    generate_welcome_message: true,
    tools: ['natural_conversation_ending'],
    built_in_tool_configs: { natural_conversation_ending: { speech_before_tool_call: 'optional' } },
  });

  for (const [id, expected] of [
    [MACHINE, 'machine'],
    [HUMAN, 'human'],
  ] as const) {
    t.test(`${id}: ${expected}`, async (t) => {
      const c = caseOf(id);
      const callee = await startSippCallee({
        scenario: 'uas_stream_wait_bye.xml',
        port: calleePort,
        files: { 'audio.ul': ulaw(renderCase(c)) },
        timeoutMs: 60_000,
      });
      const opened = node.engineLog.length;
      const r = await node.client.post('/v1/conversations/outbound_call', {
        to_phone_number: TO,
        config: { agent: 'caller' },
      });
      t.equal(r.status, 201, JSON.stringify(r.body));
      const run = await callee.done;
      sippCompleted(t, run, "the callee got the agent's BYE after its message");
      const record = await recordOf(node, r.body.conversation_id);
      const amd = record.metadata?.answering_machine;
      t.equal(amd?.result, expected, `the record: ${JSON.stringify(amd)}`);
      if (expected === 'machine') {
        t.ok(
          Math.abs(amd.beep_at_ms - c.truth.beepStartMs!) < 150,
          `the beep's time (${amd.beep_at_ms} ms after the answer, truth ${c.truth.beepStartMs})`,
        );
        t.ok(amd.beep_end_ms > amd.beep_at_ms);
      } else {
        t.equal(amd?.beep_at_ms, null);
      }
      const log = node.engineLog[opened] ?? [];
      const order = log.map((e) => e.what);
      t.same(order.slice(0, 3), ['open', 'update', 'respond'], `told, then spoke: ${JSON.stringify(log)}`);
      t.match(log[1]?.text, new RegExp(`^answering_machine: ${expected}\\.`), 'the system message names the outcome');
      if (expected === 'machine') t.match(log[1]?.text, /beep sounded \d+ ms after the answer/, 'and the beep');
      t.ok(
        record.items.some(
          (i: { role: string; live_transcript: string }) =>
            i.role === 'assistant' && /Parley calling back/.test(i.live_transcript),
        ),
        'the message was spoken',
      );
      await until(() => node.sip.activeCalls === 0, { what: 'the call released' });
    });
  }

  t.test('the callee hangs up before the outcome: the record ends, the agent never spoke', async (t) => {
    // Silence, and a BYE 3 s after the answer: before the detection could decide (6 s of audio).
    const callee = await startSippCallee({
      scenario: 'uas_stream_bye.xml',
      port: calleePort,
      files: { 'audio.ul': ulaw(new Int16Array(8000 * 5)) },
      timeoutMs: 30_000,
    });
    const opened = node.engineLog.length;
    const r = await node.client.post('/v1/conversations/outbound_call', {
      to_phone_number: TO,
      config: { agent: 'caller' },
    });
    t.equal(r.status, 201, JSON.stringify(r.body));
    sippCompleted(t, await callee.done, 'the callee hung up');
    const record = await recordOf(node, r.body.conversation_id);
    t.equal(record.ended_by, 'user');
    t.equal(record.metadata, null, 'no outcome recorded');
    t.same(
      (node.engineLog[opened] ?? []).map((e) => e.what),
      ['open'],
      'the engine was neither told nor asked to speak',
    );
    await until(() => node.sip.activeCalls === 0, { what: 'the call released' });
  });
});
