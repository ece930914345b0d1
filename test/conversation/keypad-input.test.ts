// Keys the caller presses (LiveConversation.pushDtmf): a run of keys is one user input, ended by `#` or
// DTMF_ENTRY_END_MS after its last key, recorded as one user item and answered by the engine; a key stops
// interruptible speech; a listen-only conversation records keys and turns without answering either; keys pressed
// while the conversation is set up (a call's detection of who answered under way) are held, not lost.
import t from 'tap';
import { DTMF_ENTRY_END_MS } from '../../src/conversation/conversation.js';
import { mulawEncodeInto } from '../../src/media/native/g711.js';
import type { ResolvedAgent } from '../../src/domain/conversation-agent.js';
import type { AnsweredBy } from '../../src/conversation/host.js';
import { until } from '../helpers/wait.js';
import { config, setup, speak, speechFrames } from './harness.js';
import { ProbeEngine } from './probe-engine.js';

const agent = (config: Record<string, unknown>): ResolvedAgent => ({
  orgId: 'org_test',
  project: { id: 'proj_main', name: 'main' },
  agent: { id: 'agent_phone', name: 'phone', enabled: true },
  config,
  tools: [],
});

t.test('keys in a row are one input, recorded once and answered once', async (t) => {
  const probe = new ProbeEngine();
  const s = setup({ engine: probe });
  await s.conv.start({ kind: 'config', config: config({}) });
  const startedAt = s.timers.now();
  s.conv.pushDtmf('1');
  s.timers.advance(500);
  s.conv.pushDtmf('2');
  s.timers.advance(DTMF_ENTRY_END_MS - 1);
  t.equal(probe.of('createResponse').length, 0, 'the run goes on until DTMF_ENTRY_END_MS after its last key');
  s.timers.advance(1);
  t.match(probe.of('createResponse'), [{ instructions: /pressed the keys 12 / }], 'then the engine answers it');
  s.conv.pushDtmf('3');
  s.conv.pushDtmf('#');
  t.equal(probe.of('createResponse').length, 2, '# ends a run at once');
  s.conv.pushDtmf('9');
  await s.conv.end('user');
  t.equal(probe.of('createResponse').length, 2, 'keys pending at the end are recorded, not answered');
  // (The probe engine says nothing: its answers are empty assistant items.)
  const items = s.store.only().items.filter((i) => i.role === 'user');
  t.same(
    items.map((i) => i.live_transcript),
    ['DTMF 12', 'DTMF 3#', 'DTMF 9'],
  );
  t.equal(items[0].duration_ms, 500, 'from the first key to the last');
  t.equal(items[0].started_at.getTime(), startedAt, 'starting at the first key');
  t.equal(s.store.only().finish?.live_transcript, 'user: DTMF 12\nuser: DTMF 3#\nuser: DTMF 9');
});

t.test('a key stops interruptible speech', async (t) => {
  const probe = new ProbeEngine();
  const s = setup({ engine: probe });
  await s.conv.start({ kind: 'config', config: config({ welcome_message: 'Press one for sales, two for support.' }) });
  const [welcome] = probe.of('speak');
  probe.say(welcome.id, 'Press one for sales, two for support.', 100);
  for (let i = 0; i < 10; i++) s.pacing.tick();
  s.conv.pushDtmf('1');
  t.match(probe.of('cancelResponse'), [{ id: welcome.id }], 'the welcome is cut');
  await s.conv.end('user');
  t.equal(s.store.only().finish?.interruptions_count, 1);
});

t.test('listen-only: keys and turns are recorded, neither is answered', async (t) => {
  const probe = new ProbeEngine();
  const s = setup({ engine: probe });
  await s.conv.start({
    kind: 'call',
    call: {
      conversationId: 'conv_listen',
      agent: agent({ listen_only_inbound_enabled: true, listen_only_inbound_message: 'We are listening.' }),
      format: 'mulaw_8000',
      configurationEndpoint: null,
      overrides: null,
      listenOnly: true,
    },
  });
  t.match(probe.of('speak'), [{ text: 'We are listening.' }], 'the listen-only message, not the welcome');
  probe.say(probe.of('speak')[0].id, 'We are listening.', 5);
  for (let i = 0; i < 10; i++) s.pacing.tick();
  s.conv.pushDtmf('7');
  s.conv.pushDtmf('#');
  const mulaw = speechFrames('hello', 1200).map((pcm) => {
    const out = new Uint8Array(160);
    mulawEncodeInto(new Int16Array(pcm.buffer, pcm.byteOffset, 160), out);
    return out;
  });
  await speak(s, mulaw);
  t.same(
    probe.of('commitUserTurn').map((c) => c.respond),
    [false],
    'the turn is transcribed, not answered',
  );
  t.equal(probe.of('createResponse').length, 0, 'nothing answers the keys');
  await s.conv.end('user');
  const rec = s.store.only();
  t.equal(rec.conversation.settings?.listen_only, true);
  t.ok(
    rec.items.some((i) => i.live_transcript === 'DTMF 7#'),
    'the keys recorded',
  );
});

/** A call whose answering-machine detection is still under way: the conversation is being set up until it settles. */
function callAwaitingDetection(): {
  start: Parameters<ReturnType<typeof setup>['conv']['start']>[0];
  settle: () => void;
} {
  let settle!: () => void;
  const answeredBy = new Promise<AnsweredBy>((resolve) => {
    settle = () =>
      resolve({ result: 'human', reason: 'short_answer', decided_at_ms: 900, beep_at_ms: null, beep_end_ms: null });
  });
  const start = {
    kind: 'call' as const,
    call: {
      conversationId: 'conv_keys_early',
      agent: agent({}),
      format: 'mulaw_8000' as const,
      configurationEndpoint: null,
      overrides: null,
      listenOnly: false,
      answeredBy,
    },
  };
  return { start, settle };
}

t.test('keys pressed while the conversation is set up are recorded when it ends first', async (t) => {
  const probe = new ProbeEngine();
  const s = setup({ engine: probe });
  const { start, settle } = callAwaitingDetection();
  const started = s.conv.start(start);
  await until(() => s.store.records.size === 1, { what: 'the record created' });
  s.conv.pushDtmf('5');
  await s.conv.end('user');
  // (A call's session settles its detection when the call closes.)
  settle();
  await started;
  t.same(
    s.store
      .only()
      .items.filter((i) => i.role === 'user')
      .map((i) => i.live_transcript),
    ['DTMF 5'],
    'the key is on the record',
  );
  t.equal(probe.of('createResponse').length, 0, 'and not answered');
});

t.test('keys pressed while the conversation is set up are one entry, answered once it is live', async (t) => {
  const probe = new ProbeEngine();
  const s = setup({ engine: probe });
  const { start, settle } = callAwaitingDetection();
  const started = s.conv.start(start);
  await until(() => s.store.records.size === 1, { what: 'the record created' });
  s.conv.pushDtmf('1');
  s.conv.pushDtmf('2');
  settle();
  await started;
  t.equal(probe.of('createResponse').length, 0, 'the entry goes on once live');
  s.conv.pushDtmf('3');
  s.timers.advance(DTMF_ENTRY_END_MS);
  t.match(
    probe.of('createResponse'),
    [{ instructions: /pressed the keys 123 / }],
    'then it is answered, with the keys after',
  );
  await s.conv.end('user');
  t.same(
    s.store
      .only()
      .items.filter((i) => i.role === 'user')
      .map((i) => i.live_transcript),
    ['DTMF 123'],
  );
});
