import t from 'tap';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { createCascadeEngine, sentences } from '../../src/engines/cascade.js';
import { createChatClient } from '../../src/engines/chat-client.js';
import { EngineError } from '../../src/engines/engine.js';
import { parseWav, resample } from '../../src/engines/local-tts.js';
import { startFakeChatServer, type FakeChatServer } from '../fakes/chat-server.js';
import { soundFile } from '../helpers/debian-packages.js';
import { FAKE_TTS_MS_PER_CHAR, startFakeSpeechServer, type FakeSpeechServer } from '../fakes/speech-server.js';
import { energy, Recorder, sessionOptions } from './recorder.js';

t.setTimeout(60_000);
const log = pino({ level: 'silent' });
let speech: FakeSpeechServer;
let chat: FakeChatServer;
t.beforeEach(async () => {
  speech = await startFakeSpeechServer();
  chat = await startFakeChatServer();
});
t.afterEach(async () => {
  await speech.close();
  await chat.close();
});

const tools = [
  {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object' as const, properties: { city: { type: 'string' } } },
  },
];
const samplesOf = (text: string) => (text.length * FAKE_TTS_MS_PER_CHAR * 16000) / 1000;

async function open(ttsFormat?: 'pcm' | 'wav') {
  const engine = createCascadeEngine({
    stt: { baseUrl: speech.baseUrl, model: 'whisper-test', apiKey: 'stt-key', timeoutMs: 5000 },
    tts: { baseUrl: speech.baseUrl, model: 'tts-test', timeoutMs: 5000 },
    chat: createChatClient({ baseUrl: chat.baseUrl, model: 'chat-test', maxRetries: 0, timeoutMs: 5000 }),
    voiceFor: (id) => (id === 'grant' ? 'onyx' : 'alloy'),
    ttsFormat,
    log,
  });
  const hooks = new Recorder();
  const session = await engine.open(sessionOptions({ tools, boostedKeywords: ['Parley'] }), hooks);
  return { hooks, session };
}

t.test('sentences split after end marks and keep them', async (t) => {
  t.same(sentences('Sure. Let me check!  Is that Oslo? ok'), ['Sure.', 'Let me check!', 'Is that Oslo?', 'ok']);
  t.same(sentences('   '), []);
});

t.test('a user turn: WAV to speech-to-text, chat, then speech sentence by sentence', async (t) => {
  const wav = parseWav(readFileSync(soundFile('hello-world')));
  const turn = resample(wav.pcm, 8000, 16000);
  speech.transcripts.push('hello world');
  chat.script({ reply: { content: 'Hello to you. How are you today? I am fine.' } });
  const { hooks, session } = await open();
  let ttsRequestsAtFirstAudio = -1;
  hooks.onEvent = (e) => {
    if (e.kind === 'audio' && ttsRequestsAtFirstAudio < 0) ttsRequestsAtFirstAudio = speech.speeches.length;
  };
  for (let at = 0; at < turn.length; at += 320) session.appendAudio(turn.subarray(at, at + 320));
  session.commitUserTurn();
  await hooks.untilKind('done');

  const upload = speech.transcriptions[0];
  t.equal(upload.fields.model, 'whisper-test');
  t.equal(upload.fields.language, 'en');
  t.equal(upload.fields.prompt, 'Parley', 'boosted keywords as the prompt');
  t.equal(upload.authorization, 'Bearer stt-key');
  t.equal(upload.file.type, 'audio/wav');
  const sent = parseWav(upload.file.bytes);
  t.equal(sent.sampleRate, 16000);
  t.same(Array.from(sent.pcm), Array.from(turn), 'the whole turn, as WAV');

  t.same(hooks.events[0], { kind: 'transcript', text: 'hello world', final: true });
  t.same(
    chat.requests[0].body.messages.map((m) => [m.role, m.content]),
    [
      ['system', 'You are a helpful test agent.'],
      ['user', 'hello world'],
    ],
  );
  t.equal(chat.requests[0].body.tools?.[0].function.name, 'get_weather');

  t.same(
    speech.speeches.map((s) => s.body.input),
    ['Hello to you.', 'How are you today?', 'I am fine.'],
    'one speech request per sentence',
  );
  t.same(
    speech.speeches.map((s) => [s.body.voice, s.body.model, s.body.response_format]),
    Array(3).fill(['onyx', 'tts-test', 'pcm']),
  );
  t.ok(
    ttsRequestsAtFirstAudio >= 1 && ttsRequestsAtFirstAudio <= 2,
    `audio started before the last sentence was asked for (${ttsRequestsAtFirstAudio} of 3)`,
  );
  const id = (hooks.events.find((e) => e.kind === 'done') as { responseId: string }).responseId;
  t.same(
    hooks.events.filter((e) => e.kind === 'text').map((e) => (e as { delta: string }).delta),
    ['Hello to you.', ' How are you today?', ' I am fine.'],
  );
  const audio = hooks.samplesOf(id);
  const expected = samplesOf('Hello to you.') + samplesOf('How are you today?') + samplesOf('I am fine.');
  t.ok(Math.abs(audio.length - expected) <= 3, `24 kHz PCM resampled to 16 kHz (${audio.length} of ${expected})`);
  t.ok(energy(audio) > 1000);
  await session.close();
});

t.test('speech answered as WAV is read by its header and resampled', async (t) => {
  speech.speechAsWav = true;
  const { hooks, session } = await open('wav');
  const id = session.speak('Twelve chars');
  await hooks.untilDone(id);
  t.equal(speech.speeches[0].body.response_format, 'wav');
  t.ok(Math.abs(hooks.samplesOf(id).length - samplesOf('Twelve chars')) <= 3);
  t.equal(chat.requests.length, 0, 'speak needs no chat model');
  await session.close();
});

t.test('tool calls go out after the speech; their outputs feed the next completion', async (t) => {
  speech.transcripts.push('weather in oslo');
  chat.script(
    {
      reply: {
        content: 'Let me look.',
        toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: { city: 'Oslo' } }],
      },
    },
    { reply: { content: 'It is snowing.' } },
  );
  const { hooks, session } = await open();
  hooks.onEvent = (e) => {
    if (e.kind === 'tool') session.submitToolOutput(e.call.callId, '{"sky":"snow"}', true);
  };
  session.appendAudio(new Int16Array(3200));
  session.commitUserTurn();
  await hooks.untilKind('done', 2);
  const [first, second] = hooks.events
    .filter((e) => e.kind === 'done')
    .map((e) => (e as { responseId: string }).responseId);
  const tool = hooks.events.find((e) => e.kind === 'tool') as { call: unknown };
  t.same(tool.call, { responseId: first, callId: 'call_w1', name: 'get_weather', arguments: { city: 'Oslo' } });
  const toolAt = hooks.events.findIndex((e) => e.kind === 'tool');
  const lastAudioAt = hooks.events.findLastIndex((e) => e.kind === 'audio' && e.responseId === first);
  t.ok(lastAudioAt >= 0 && toolAt > lastAudioAt, 'after its audio');
  const messages = chat.requests[1].body.messages;
  t.same(
    messages.slice(-2).map((m) => m.role),
    ['assistant', 'tool'],
  );
  t.equal(messages.at(-1)!.tool_call_id, 'call_w1');
  t.equal(messages.at(-1)!.content, '{"sky":"snow"}');
  t.equal((messages.at(-2)!.tool_calls as { id: string }[])[0].id, 'call_w1');
  t.ok(hooks.events.some((e) => e.kind === 'text' && e.responseId === second && e.delta === 'It is snowing.'));
  await session.close();
});

t.test('barge-in stops the reply and keeps only the played sentences in the history', async (t) => {
  chat.script({ reply: { content: 'First part. Second part. Third part.' } }, { reply: { content: 'Sorry.' } });
  const { hooks, session } = await open();
  const id = session.createResponse();
  hooks.onEvent = (e) => {
    if (e.kind === 'audio' && e.responseId === id) session.cancelResponse(id, 10);
  };
  await hooks.untilKind('audio');
  hooks.onEvent = () => {};
  const next = session.createResponse('Apologise.');
  await hooks.untilDone(next);
  t.notOk(
    hooks.events.some((e) => e.kind === 'done' && e.responseId === id),
    'no done for the canceled reply',
  );
  t.same(
    hooks.events.filter((e) => e.kind === 'text' && e.responseId === id).map((e) => (e as { delta: string }).delta),
    ['First part.'],
  );
  const assistant = chat.requests[1].body.messages.find((m) => m.role === 'assistant');
  t.equal(assistant?.content, 'First part.', 'truncated to what was played');
  t.same(chat.requests[1].body.messages.at(-1), { role: 'system', content: 'Apologise.' }, 'instructions last');
  await session.close();
});

t.test('silence: an empty transcript is not answered', async (t) => {
  const { hooks, session } = await open();
  session.appendAudio(new Int16Array(320));
  session.commitUserTurn();
  await hooks.untilKind('transcript');
  const marker = session.speak('marker');
  await hooks.untilDone(marker);
  t.same(hooks.events[0], { kind: 'transcript', text: '', final: true });
  t.equal(chat.requests.length, 0);
  await session.close();
});

t.test('failures of each service surface as onError(EngineError)', async (t) => {
  for (const [name, arrange, pattern] of [
    ['speech-to-text', () => void (speech.failTranscription = 500), /audio\/transcriptions: HTTP 500/],
    ['text-to-speech', () => void (speech.failSpeech = 400), /audio\/speech: HTTP 400: .*voice unknown/],
    [
      'chat',
      () => chat.script({ status: 400, body: { error: { message: 'bad tools' } } }),
      /rejected the request with HTTP 400/,
    ],
  ] as const) {
    speech.failTranscription = null;
    speech.failSpeech = null;
    speech.transcripts.push('hi');
    arrange();
    const { hooks, session } = await open();
    session.appendAudio(new Int16Array(320));
    session.commitUserTurn();
    await hooks.untilKind('error');
    const e = (hooks.events.find((x) => x.kind === 'error') as { error: EngineError }).error;
    t.ok(e instanceof EngineError, name);
    t.equal(e.engine, 'cascade');
    t.match(e.message, pattern, name);
    await session.close();
  }
});

t.test(
  'updateSession (a transfer): the next reply speaks with the new voice, the next turn is transcribed in the new language',
  async (t) => {
    const { hooks, session } = await open();
    const first = session.speak('Hello.');
    session.updateSession({
      voiceId: 'sarah',
      defaultLanguage: 'fr',
      boostedKeywords: ['facture'],
      pronunciations: [{ word: 'SEPA', pronunciation: 'seepa' }],
    });
    t.equal(session.voiceId, 'sarah');
    const second = session.speak('Paiement SEPA.');
    await hooks.untilDone(second);
    t.ok(hooks.events.some((e) => e.kind === 'done' && e.responseId === first));
    t.same(
      speech.speeches.map((s) => [s.body.input, s.body.voice]),
      [
        ['Hello.', 'onyx'],
        ['Paiement seepa.', 'alloy'],
      ],
      'a reply asked for before the update keeps its voice; the next one has the new voice and pronunciations',
    );
    speech.transcripts.push('bonjour');
    session.appendAudio(new Int16Array(3200).fill(500));
    session.commitUserTurn();
    await hooks.until(() => hooks.events.some((e) => e.kind === 'transcript' && e.text === 'bonjour'));
    const upload = speech.transcriptions[0];
    t.equal(upload.fields.language, 'fr', 'transcribed in the new language');
    t.equal(upload.fields.prompt, 'facture', 'with the new boosted keywords');
    await session.close();
  },
);

/** A session with get_weather and a keypad tool whose call silences its reply. */
async function openWithKeypad() {
  const engine = createCascadeEngine({
    stt: { baseUrl: speech.baseUrl, model: 'whisper-test', timeoutMs: 5000 },
    tts: { baseUrl: speech.baseUrl, model: 'tts-test', timeoutMs: 5000 },
    chat: createChatClient({ baseUrl: chat.baseUrl, model: 'chat-test', maxRetries: 0, timeoutMs: 5000 }),
    voiceFor: () => 'alloy',
    log,
  });
  const keypad = {
    name: 'keypad_input',
    description: 'Press keys',
    parameters: { type: 'object' as const, properties: { digits: { type: 'string' } } },
    speechSuppressed: true,
  };
  const hooks = new Recorder();
  const session = await engine.open(sessionOptions({ tools: [...tools, keypad] }), hooks);
  return { hooks, session };
}

t.test('a reply calling a speech-suppressed tool is not spoken; the history keeps it unsaid', async (t) => {
  chat.script(
    {
      reply: {
        content: 'Pressing one for sales.',
        toolCalls: [{ id: 'call_k', name: 'keypad_input', arguments: { digits: '1' } }],
      },
    },
    { reply: { content: 'Done.' } },
  );
  const { hooks, session } = await openWithKeypad();
  hooks.onEvent = (e) => {
    if (e.kind === 'tool') session.submitToolOutput(e.call.callId, 'pressed 1', true);
  };
  const id = session.createResponse();
  await hooks.untilKind('done', 2);
  t.same(
    hooks.events.filter((e) => e.kind !== 'done' && 'responseId' in e && e.responseId === id).map((e) => e.kind),
    [],
    'no text nor audio of the reply',
  );
  t.ok(
    hooks.events.some((e) => e.kind === 'tool' && e.call.name === 'keypad_input'),
    'the call is made',
  );
  t.same(
    speech.speeches.map((s) => s.body.input),
    ['Done.'],
    'only the reply after the output is synthesized',
  );
  const assistant = chat.requests[1].body.messages.find((m) => m.role === 'assistant');
  t.same(
    [assistant?.content, (assistant?.tool_calls as { id: string }[])[0].id],
    [null, 'call_k'],
    'the call without the unsaid text',
  );
  await session.close();
});

t.test('speech only: the reply after an output, and a createResponse, are asked with tool_choice none', async (t) => {
  chat.script(
    {
      reply: { content: 'Checking.', toolCalls: [{ id: 'call_w', name: 'get_weather', arguments: { city: 'Oslo' } }] },
    },
    { reply: { content: 'It is snowing.' } },
    { reply: { content: 'Anything else?' } },
  );
  const { hooks, session } = await open();
  hooks.onEvent = (e) => {
    if (e.kind === 'tool') session.submitToolOutput(e.call.callId, '{"sky":"snow"}', true, { speechOnly: true });
  };
  session.createResponse();
  await hooks.untilKind('done', 2);
  hooks.onEvent = () => {};
  await hooks.untilDone(session.createResponse(undefined, { speechOnly: true }));
  t.same(
    chat.requests.map((r) => r.body.tool_choice),
    ['auto', 'none', 'none'],
  );
  t.ok(
    chat.requests.every((r) => r.body.tools?.length === 1),
    'the tools stay declared (the history holds their calls)',
  );
  await session.close();
});

t.test(
  'a speech-only line asked while a call awaits its output: asked without the open call, said as the speech before it',
  async (t) => {
    chat.script(
      { reply: { content: null, toolCalls: [{ id: 'call_w', name: 'get_weather', arguments: { city: 'Oslo' } }] } },
      { reply: { content: 'Let me look that up.' } },
      { reply: { content: 'It is snowing.' } },
    );
    const { hooks, session } = await open();
    const first = session.createResponse();
    await hooks.untilDone(first);
    const call = (hooks.events.find((e) => e.kind === 'tool') as { call: { callId: string } }).call;
    const line = session.createResponse('Say what you are about to do.', { speechOnly: true });
    await hooks.untilDone(line);
    t.same(
      chat.requests[1].body.messages.map((m) => [m.role, m.content ?? null, m.tool_calls ? 'calls' : '']),
      [
        ['system', 'You are a helpful test agent.', ''],
        ['system', 'Say what you are about to do.', ''],
      ],
      'the call awaiting its output is left out (a chat model refuses it)',
    );
    t.equal(chat.requests[1].body.tool_choice, 'none');
    session.submitToolOutput(call.callId, '{"sky":"snow"}', true);
    await hooks.untilKind('done', 3);
    t.same(
      chat.requests[2].body.messages
        .slice(1)
        .map((m) => [
          m.role,
          m.content ?? null,
          (m.tool_calls as { id: string }[] | undefined)?.map((c) => c.id) ?? m.tool_call_id ?? null,
        ]),
      [
        ['assistant', 'Let me look that up.', ['call_w']],
        ['tool', '{"sky":"snow"}', 'call_w'],
      ],
      'the line is the speech before the call',
    );
    t.same(
      speech.speeches.map((s) => s.body.input),
      ['Let me look that up.', 'It is snowing.'],
    );
    await session.close();
  },
);
