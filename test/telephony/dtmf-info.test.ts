// The keypad tool on a call whose callee negotiated no telephone-event, end to end through a whole node in one
// process (call-node.ts): a SIPp callee answering with PCMU alone gets the digits as SIP INFO
// (application/dtmf-relay, Signal= and Duration=), one INFO per digit, in order, each after the one before it was
// answered; then it hangs up and the record keeps the tool call.
import t from 'tap';
import { mulawEncodeInto } from '../../src/media/native/g711.js';
import { DTMF_INFO_DURATION_MS } from '../../src/telephony/dtmf-info.js';
import { loadManifest, renderCase } from '../fixtures/voicemail/labelled-set.js';
import { until } from '../helpers/wait.js';
import { startCallNode } from './call-node.js';
import { agentWithNumber } from './sip-node.js';
import { freeUdpPort, headerOf, sippCompleted, startSippCallee } from './sipp-scenario.js';

t.setTimeout(120_000);

const TO = '+14155550123';
const OWN = '+14155550100';

t.test('keys pressed on a call without telephone-event go out as SIP INFO', async (t) => {
  const calleePort = await freeUdpPort();
  const node = await startCallNode({
    trunks: [
      {
        name: 'carrier',
        inbound: null,
        outbound: { uri: `sip:127.0.0.1:${calleePort}`, transport: null, auth: null, caller_id: null },
      },
    ],
    script: {
      turns: [],
      responses: [
        { say: 'Pressing one, two, pound.', tool_calls: [{ name: 'keypad_input', arguments: { digits: '12#' } }] },
      ],
      word_ms: 250,
      end_tool: 'natural_conversation_ending',
    },
  });
  t.teardown(() => node.close());
  await agentWithNumber(node.client, 'caller', OWN, {
    audio_format: 'mulaw_8000',
    generate_welcome_message: true,
    tools: ['keypad_input'],
  });

  // The callee says hello (the call's answering-machine detection settles human at once) and takes three INFOs.
  const hello = loadManifest().cases.find((c) => c.id === 'human-008')!;
  const pcm = renderCase(hello);
  const audio = new Uint8Array(pcm.length);
  mulawEncodeInto(pcm, audio);
  const callee = await startSippCallee({
    scenario: 'uas_info_digits.xml',
    port: calleePort,
    files: { 'audio.ul': audio },
    timeoutMs: 60_000,
  });
  const r = await node.client.post('/v1/conversations/outbound_call', {
    to_phone_number: TO,
    config: { agent: 'caller' },
  });
  t.equal(r.status, 201, JSON.stringify(r.body));
  const run = await callee.done;
  sippCompleted(t, run, 'the callee got three INFOs and hung up');

  const invite = run.received.find((m) => m.startsWith('INVITE ')) ?? '';
  t.match(invite, /telephone-event/, 'Parley offered telephone-event; the callee answered without it');
  const infos = run.received.filter((m) => m.startsWith('INFO '));
  t.equal(infos.length, 3, 'one INFO per digit');
  t.same(
    infos.map((m) => /^Signal=(.+?)\r?$/m.exec(m)?.[1]),
    ['1', '2', '#'],
    'the digits in order',
  );
  for (const m of infos) {
    t.equal(headerOf(m, 'Content-Type'), 'application/dtmf-relay');
    t.match(m, new RegExp(`^Duration=${DTMF_INFO_DURATION_MS}\\r?$`, 'm'));
  }
  const cseqs = infos.map((m) => Number(/^(\d+)/.exec(headerOf(m, 'CSeq') ?? '')?.[1]));
  t.ok(cseqs[0]! < cseqs[1]! && cseqs[1]! < cseqs[2]!, `sent one after another (CSeq ${cseqs.join(', ')})`);

  let record: Record<string, any> = {};
  await until(
    async () => {
      record = (await node.client.get(`/v1/conversations/${r.body.conversation_id}`)).body.conversation;
      return record?.ended_by != null;
    },
    { what: 'the record finished', timeoutMs: 20_000 },
  );
  t.equal(record.ended_by, 'user', 'the callee hung up');
  const calls = record.items.flatMap(
    (i: { tool_calls?: { tool: { name: string }; response_body: unknown }[] }) => i.tool_calls ?? [],
  );
  t.match(calls, [{ tool: { name: 'keypad_input' }, response_body: { digits: '12#' } }], 'the tool call on the record');
});
