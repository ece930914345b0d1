import t from 'tap';
import { pino } from 'pino';
import { EngineError, type SpeechEngineSession } from '../../src/engines/engine.js';
import { createOpenAiRealtimeEngine } from '../../src/engines/openai-realtime.js';
import { startFakeRealtimeServer, type FakeRealtimeServer } from '../fakes/realtime-server.js';
import { until } from '../helpers/wait.js';
import { Recorder, sessionOptions } from './recorder.js';

t.setTimeout(60_000);
const log = pino({ level: 'silent' });
let fake: FakeRealtimeServer;
t.beforeEach(async () => {
  fake = await startFakeRealtimeServer();
});
t.afterEach(() => fake.close());

const tools = [
  {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

async function open(overrides: Parameters<typeof sessionOptions>[0] = {}, turnDetection?: 'parley' | 'server') {
  const engine = createOpenAiRealtimeEngine({
    url: fake.url,
    model: 'gpt-realtime-test',
    apiKey: 'sk-test',
    voiceFor: (id) => (id === 'grant' ? 'ash' : 'alloy'),
    turnDetection,
    openTimeoutMs: 5000,
    log,
  });
  const hooks = new Recorder();
  const session: SpeechEngineSession = await engine.open(sessionOptions({ tools, ...overrides }), hooks);
  return { hooks, session };
}

t.test('configures the session: prompt, voice, pcm16, our turn detection, tools, model and key', async (t) => {
  const { session } = await open({ pronunciations: [{ word: 'Parley', pronunciation: 'PAR-lee' }] });
  t.equal(session.sampleRate, 24000);
  t.match(fake.lastUpgrade!.url, /\?model=gpt-realtime-test$/);
  t.equal(fake.lastUpgrade!.headers.authorization, 'Bearer sk-test');
  const update = fake.events[0] as { type: string; session: Record<string, unknown> };
  t.equal(update.type, 'session.update');
  t.match(update.session.instructions, /^You are a helpful test agent\./);
  t.match(update.session.instructions, /"Parley" as "PAR-lee"/);
  t.equal(update.session.voice, 'ash');
  t.equal(update.session.input_audio_format, 'pcm16');
  t.equal(update.session.output_audio_format, 'pcm16');
  t.equal(update.session.turn_detection, null, "Parley's VAD ends turns");
  t.same(update.session.tools, [
    { type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: tools[0].parameters },
  ]);
  await session.close();
});

t.test('a user turn: audio appended, committed, transcribed, answered with audio and text', async (t) => {
  const { hooks, session } = await open();
  fake.script({ audioSamples: 4800, chunks: 4, transcript: 'Nice to meet you' });
  const pcm = new Int16Array(480).map((_, i) => i * 7 - 1000);
  session.appendAudio(pcm);
  session.commitUserTurn();
  await hooks.untilKind('done');
  const append = fake.events.find((e) => e.type === 'input_audio_buffer.append') as unknown as { audio: string };
  const sent = Buffer.from(append.audio, 'base64');
  t.same(
    Array.from(new Int16Array(sent.buffer, sent.byteOffset, sent.length / 2)),
    Array.from(pcm),
    'the very samples, base64 PCM16',
  );
  t.same(fake.events.map((e) => e.type).slice(1), [
    'input_audio_buffer.append',
    'input_audio_buffer.commit',
    'response.create',
  ]);
  const transcripts = hooks.events.filter((e) => e.kind === 'transcript');
  t.same(transcripts.at(-1), { kind: 'transcript', text: 'hello there', final: true });
  t.same(transcripts[0], { kind: 'transcript', text: 'hello', final: false }, 'live deltas first');
  const done = hooks.events.find((e) => e.kind === 'done') as { responseId: string };
  const audio = hooks.samplesOf(done.responseId);
  t.equal(audio.length, 4800);
  t.equal(audio[1], Math.round(8000 * Math.sin((2 * Math.PI * 440) / 24000)), 'decoded PCM16 little-endian');
  t.same(
    hooks.events
      .filter((e) => e.kind === 'text')
      .map((e) => (e as { delta: string }).delta)
      .join(''),
    'Nice to meet you',
  );
  await session.close();
});

t.test('the newer output_audio event names are understood too', async (t) => {
  const { hooks, session } = await open();
  fake.script({ audioSamples: 960, chunks: 1, transcript: 'Hi', ga: true });
  const id = session.createResponse();
  await hooks.untilDone(id);
  t.equal(hooks.samplesOf(id).length, 960);
  t.ok(hooks.events.some((e) => e.kind === 'text' && e.delta === 'Hi'));
  await session.close();
});

t.test('function calls reach onToolCall; their output goes back as an item and a new response', async (t) => {
  const { hooks, session } = await open();
  fake.script(
    {
      transcript: 'Checking',
      functionCall: { name: 'get_weather', arguments: '{"city":"Oslo"}', call_id: 'call_abc' },
    },
    { transcript: 'Snowing' },
  );
  const first = session.createResponse('Greet the caller.');
  hooks.onEvent = (e) => {
    if (e.kind === 'tool') session.submitToolOutput(e.call.callId, '{"sky":"snow"}', true);
  };
  await hooks.untilKind('done', 2);
  const tool = hooks.events.find((e) => e.kind === 'tool') as { call: unknown };
  t.same(tool.call, { responseId: first, callId: 'call_abc', name: 'get_weather', arguments: { city: 'Oslo' } });
  const create = fake.events.find((e) => e.type === 'response.create') as { response?: { instructions?: string } };
  t.match(create.response?.instructions, /Greet the caller\.$/, 'createResponse instructions ride on response.create');
  const output = fake.events.find((e) => e.type === 'conversation.item.create') as unknown as { item: unknown };
  t.same(output.item, { type: 'function_call_output', call_id: 'call_abc', output: '{"sky":"snow"}' });
  t.equal(fake.events.filter((e) => e.type === 'response.create').length, 2, 'respond: a new response');
  await session.close();
});

t.test('barge-in cancels the response and truncates its item to what was played', async (t) => {
  const { hooks, session } = await open();
  fake.script({ audioSamples: 24000, chunks: 10, hold: true });
  const id = session.speak('A long answer.');
  await hooks.untilKind('audio');
  session.cancelResponse(id, 40);
  const next = session.speak('Next.');
  await hooks.untilDone(next);
  const cancel = fake.events.find((e) => e.type === 'response.cancel');
  t.same(cancel, { type: 'response.cancel', response_id: 'resp_1' });
  const truncate = fake.events.find((e) => e.type === 'conversation.item.truncate');
  t.same(truncate, { type: 'conversation.item.truncate', item_id: 'item_1', content_index: 0, audio_end_ms: 40 });
  t.equal(hooks.events.filter((e) => e.kind === 'audio' && e.responseId === id).length, 1, 'no audio after the cancel');
  t.notOk(
    hooks.events.some((e) => e.kind === 'done' && e.responseId === id),
    'no done for it',
  );
  t.match(
    (fake.events.find((e) => e.type === 'response.create') as unknown as { response: { instructions: string } })
      .response.instructions,
    /A long answer\./,
  );
  t.notOk(hooks.events.some((e) => e.kind === 'error'));
  await session.close();
});

t.test('a response.create the server refuses (one already active) is done, having said nothing', async (t) => {
  const { hooks, session } = await open();
  fake.script(
    { error: { code: 'conversation_already_has_active_response', message: 'busy' } },
    { transcript: 'Later' },
  );
  const refused = session.createResponse();
  await hooks.untilDone(refused);
  t.equal(hooks.samplesOf(refused).length, 0);
  const next = session.createResponse();
  await hooks.untilDone(next);
  t.ok(
    hooks.events.some((e) => e.kind === 'text' && e.responseId === next && e.delta === 'Later'),
    'the next response is bound to its own id',
  );
  t.notOk(hooks.events.some((e) => e.kind === 'error'));
  await session.close();
});

t.test('server VAD: commit is left to the server', async (t) => {
  const { session } = await open({}, 'server');
  t.same((fake.events[0] as unknown as { session: { turn_detection: unknown } }).session.turn_detection, {
    type: 'server_vad',
  });
  session.appendAudio(new Int16Array(480));
  session.commitUserTurn();
  session.clearUserTurn();
  await fake.waitFor('input_audio_buffer.clear');
  t.notOk(fake.events.some((e) => e.type === 'input_audio_buffer.commit' || e.type === 'response.create'));
  await session.close();
});

t.test('errors: refused session, refused upgrade, server error, failed response, dropped socket', async (t) => {
  fake.refuseSession = true;
  await t.rejects(open(), { name: 'EngineError', message: /session refused: voice not supported/ });
  fake.refuseSession = false;
  fake.rejectUpgradeStatus = 401;
  await t.rejects(open(), { name: 'EngineError', message: /HTTP 401/ });
  fake.rejectUpgradeStatus = null;

  {
    const { hooks, session } = await open();
    fake.script(
      { error: { code: 'response_cancel_not_active', message: 'benign race' } },
      { error: { code: 'server_error', message: 'boom' } },
    );
    session.createResponse();
    session.createResponse();
    await hooks.untilKind('error');
    const errors = hooks.events.filter((e) => e.kind === 'error') as { error: EngineError }[];
    t.equal(errors.length, 1, 'a benign race is no error; a real one is');
    t.ok(errors[0].error instanceof EngineError);
    t.match(errors[0].error.message, /boom \(server_error\)/);
    await session.close();
  }
  {
    const { hooks, session } = await open();
    fake.script({ status: 'failed' });
    session.createResponse();
    await hooks.untilKind('error');
    t.match((hooks.events.find((e) => e.kind === 'error') as { error: Error }).error.message, /response failed/);
    await session.close();
  }
  {
    const { hooks, session } = await open();
    fake.dropClients();
    await hooks.untilKind('error');
    t.match(
      (hooks.events.find((e) => e.kind === 'error') as { error: Error }).error.message,
      /server closed the session \(1011/,
    );
    await session.close();
  }
  {
    const { hooks, session } = await open();
    await session.close();
    t.equal(hooks.events.length, 0, 'a clean close is no error');
  }
});

t.test('open gives up when the conversation ends meanwhile', async (t) => {
  const ac = new AbortController();
  ac.abort();
  await t.rejects(open({ signal: ac.signal }), { name: 'EngineError', message: /ended while the engine opened/ });
});

type SessionUpdateEvent = { type: string; session: Record<string, unknown> };
const sessionUpdates = () =>
  fake.events.filter((e) => e.type === 'session.update').slice(1) as unknown as SessionUpdateEvent[];

t.test(
  'updateSession (a transfer) before any audio: prompt, keywords and language in one session.update, the voice in its own',
  async (t) => {
    const { hooks, session } = await open();
    session.updateSession({
      systemPrompt: 'You handle billing.',
      voiceId: 'sarah',
      defaultLanguage: 'fr',
      boostedKeywords: ['facture'],
      tools: [],
    });
    await fake.waitFor('session.update', 3);
    const [settings, voice] = sessionUpdates();
    t.match(settings.session.instructions, /^You handle billing\.\n\nWords you may hear: facture\.$/);
    t.same(settings.session.input_audio_transcription, { model: 'whisper-1', language: 'fr' });
    t.same(settings.session.tools, []);
    t.notOk('voice' in settings.session, 'a refused voice cannot take the rest of the update with it');
    t.same(voice.session, { voice: 'alloy' }, "the new agent's voice, mapped for the engine");
    t.equal(session.voiceId, 'sarah');
    const id = session.createResponse();
    await hooks.untilDone(id);
    t.equal(session.voiceId, 'sarah', 'the server took it');
    t.notOk(hooks.events.some((e) => e.kind === 'error'));
    await session.close();
  },
);

t.test(
  'a voice change after audio: not sent (the protocol refuses it), the voice stays, the rest applies',
  async (t) => {
    const { hooks, session } = await open();
    const id = session.createResponse();
    await hooks.untilDone(id);
    session.updateSession({ systemPrompt: 'You handle billing.', voiceId: 'sarah' });
    await fake.waitFor('session.update', 2);
    const next = session.createResponse();
    await hooks.untilDone(next);
    t.same(
      sessionUpdates().map((u) => Object.keys(u.session)),
      [['instructions']],
      'only the prompt went out',
    );
    t.equal(session.voiceId, 'grant', 'the session says it keeps its voice');
    await session.close();
  },
);

t.test('a voice change the server refuses (audio crossed it): the voice stays, the conversation goes on', async (t) => {
  const { hooks, session } = await open();
  const first = session.createResponse();
  // Sent before this side has seen the first response's audio: the fake has sent audio by the time it reads it.
  session.updateSession({ voiceId: 'sarah' });
  t.equal(session.voiceId, 'sarah', 'asked for');
  await hooks.untilDone(first);
  await until(() => session.voiceId === 'grant', {
    what: 'the refusal taken back to the old voice',
    timeoutMs: 1_000,
    intervalMs: 5,
  });
  t.equal(session.voiceId, 'grant', 'refused: the old voice stays');
  t.same(
    sessionUpdates().map((u) => u.session),
    [{ voice: 'alloy' }],
    'the voice was asked for',
  );
  t.notOk(
    hooks.events.some((e) => e.kind === 'error'),
    'cannot_update_voice is no engine error',
  );
  const next = session.createResponse();
  await hooks.untilDone(next);
  t.ok(hooks.samplesOf(next).length > 0, 'the session still answers');
  await session.close();
});

t.test(
  'tool outputs: one response.create once every call of the response has its output and the response is done',
  async (t) => {
    const { hooks, session } = await open();
    fake.script(
      {
        transcript: 'Checking both',
        functionCalls: [
          { name: 'get_weather', arguments: '{"city":"Oslo"}', call_id: 'call_1' },
          { name: 'get_weather', arguments: '{"city":"Rome"}', call_id: 'call_2' },
        ],
      },
      { transcript: 'Snow and sun' },
    );
    const first = session.createResponse();
    // Outputs as the calls arrive: before the server's response.done.
    hooks.onEvent = (e) => {
      if (e.kind === 'tool')
        session.submitToolOutput(
          e.call.callId,
          `{"city":"${String(e.call.arguments.city)}"}`,
          e.call.callId === 'call_2',
        );
    };
    await hooks.untilKind('done', 2);
    const types = fake.events
      .map((e) => e.type)
      .filter((ty) => ty === 'response.create' || ty === 'conversation.item.create');
    t.same(
      types,
      ['response.create', 'conversation.item.create', 'conversation.item.create', 'response.create'],
      'both outputs, then one reply',
    );
    const replies = hooks.events.filter((e) => e.kind === 'done').map((e) => (e as { responseId: string }).responseId);
    t.equal(replies[0], first);
    t.ok(
      hooks.events.some((e) => e.kind === 'text' && e.responseId === replies[1] && e.delta === 'Snow'),
      'the reply was made, not refused as a second active response',
    );
    t.notOk(
      fake.events.some((e) => e.type === 'error'),
      'nothing refused',
    );
    await session.close();
  },
);

t.test('tool outputs asking for no reply: no response.create', async (t) => {
  const { hooks, session } = await open();
  fake.script({
    transcript: 'Noted',
    functionCall: { name: 'get_weather', arguments: '{"city":"Oslo"}', call_id: 'call_1' },
  });
  session.createResponse();
  hooks.onEvent = (e) => {
    if (e.kind === 'tool') session.submitToolOutput(e.call.callId, '{}', false);
  };
  await hooks.untilKind('done');
  const marker = session.speak('marker');
  await hooks.untilDone(marker);
  t.equal(fake.events.filter((e) => e.type === 'response.create').length, 2, 'the first response and the marker only');
  await session.close();
});

t.test('speech-only responses: tool_choice none on createResponse and on the reply after an output', async (t) => {
  const { hooks, session } = await open();
  fake.script(
    { transcript: 'Checking', functionCall: { name: 'get_weather', arguments: '{"city":"Oslo"}', call_id: 'call_1' } },
    { transcript: 'Snowing' },
    { transcript: 'One moment' },
  );
  session.createResponse();
  hooks.onEvent = (e) => {
    if (e.kind === 'tool') session.submitToolOutput(e.call.callId, '{"sky":"snow"}', true, { speechOnly: true });
  };
  await hooks.untilKind('done', 2);
  hooks.onEvent = () => {};
  const line = session.createResponse('Say what you are about to do.', { speechOnly: true });
  await hooks.untilDone(line);
  const creates = fake.events.filter((e) => e.type === 'response.create') as unknown as {
    response?: { tool_choice?: string; instructions?: string };
  }[];
  t.same(
    creates.map((c) => c.response?.tool_choice ?? 'auto'),
    ['auto', 'none', 'none'],
    'the reply to the output and the line: speech only',
  );
  t.match(creates[2].response?.instructions, /Say what you are about to do\.$/, 'instructions ride along');
  await session.close();
});

t.test('a speech-suppressed tool: the model is told to call it without speaking first', async (t) => {
  const { session } = await open({
    tools: [
      {
        name: 'keypad_input',
        description: 'Press keys.',
        parameters: { type: 'object', properties: {} },
        speechSuppressed: true,
      },
    ],
  });
  const update = fake.events[0] as unknown as { session: { tools: { name: string; description: string }[] } };
  t.same(
    update.session.tools.map((x) => x.description),
    ['Press keys.\nCall this function without saying anything first.'],
  );
  session.updateSession({
    tools: [
      ...tools,
      {
        name: 'keypad_input',
        description: 'Press keys.',
        parameters: { type: 'object', properties: {} },
        speechSuppressed: true,
      },
    ],
  });
  await fake.waitFor('session.update', 2);
  const later = fake.events.filter((e) => e.type === 'session.update')[1] as unknown as {
    session: { tools: { description: string }[] };
  };
  t.same(
    later.session.tools.map((x) => x.description),
    ['Weather of a city', 'Press keys.\nCall this function without saying anything first.'],
    'on updates too',
  );
  await session.close();
});
