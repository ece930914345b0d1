import t from 'tap';
import { pino } from 'pino';
import { EngineError, type EngineTool } from '../../src/engines/engine.js';
import { TONE_GAP_MS, TONE_WORD_MS } from '../../src/engines/local-tts.js';
import {
  createScriptedEngine,
  parseScript,
  type EngineScript,
  type ScriptedSession,
} from '../../src/engines/scripted.js';
import { toneTts } from '../helpers/speech.js';
import { Recorder, sessionOptions } from './recorder.js';

const log = pino({ level: 'silent' });
/** Tones: deterministic, and their length is a known function of the words. */
const tts = toneTts;
const wordSamples = ((TONE_WORD_MS + TONE_GAP_MS) * 16000) / 1000;
const frame = new Int16Array(320); // 20 ms at 16 kHz

const script: EngineScript = parseScript({
  word_ms: 100,
  turns: [
    {
      heard: 'what is the weather in Paris',
      say: 'Let me check that.',
      tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }],
      after_tool_output: { say: 'It is sunny.' },
    },
    { heard: 'thanks bye', words: ['thanks'], say: 'Goodbye!', end: true },
  ],
  responses: [{ say: 'Hello from the script.' }],
});

async function open(s: EngineScript | null = script, engineSettings?: Record<string, unknown>) {
  const hooks = new Recorder();
  const engine = createScriptedEngine({ tts: tts(), voiceFor: () => 'en-us', log, script: s });
  const session = await engine.open(sessionOptions({ engineSettings }), hooks);
  return { hooks, session };
}

t.test('reports what it heard word by word as the user speaks, then the whole turn', async (t) => {
  const { hooks, session } = await open();
  t.equal(session.transcribesLive, true);
  for (let i = 0; i < 5; i++) session.appendAudio(frame); // 100 ms: one word
  t.same(hooks.events, [{ kind: 'transcript', text: 'what', final: false }]);
  for (let i = 0; i < 10; i++) session.appendAudio(frame); // 300 ms in all: three words
  t.same(
    hooks.events.map((e) => (e as { text: string }).text),
    ['what', 'what is', 'what is the'],
  );
  for (let i = 0; i < 100; i++) session.appendAudio(frame); // long past the last word: no more reports
  t.equal(hooks.events.length, 6, 'one report per word, six words');
  session.commitUserTurn();
  t.same(hooks.events.at(-1), { kind: 'transcript', text: 'what is the weather in Paris', final: true });
  await session.close();
});

t.test('a cleared turn starts hearing again and does not consume the script', async (t) => {
  const { hooks, session } = await open();
  for (let i = 0; i < 10; i++) session.appendAudio(frame);
  session.clearUserTurn();
  for (let i = 0; i < 5; i++) session.appendAudio(frame);
  t.same(hooks.events.at(-1), { kind: 'transcript', text: 'what', final: false }, 'counting restarted');
  session.commitUserTurn();
  t.same(
    hooks.events.at(-1),
    { kind: 'transcript', text: 'what is the weather in Paris', final: true },
    'still the first turn',
  );
  await session.close();
});

t.test('says its line, calls its tools, continues after their output, and ends when told', async (t) => {
  const { hooks, session } = await open();
  hooks.onEvent = (e) => {
    if (e.kind === 'tool' && e.call.name === 'get_weather')
      session.submitToolOutput(e.call.callId, '{"sky":"sunny"}', true);
  };
  session.commitUserTurn();
  await hooks.untilKind('done', 2);
  const [first, second] = hooks.events
    .filter((e) => e.kind === 'done')
    .map((e) => (e as { responseId: string }).responseId);
  const forFirst = hooks.events.filter((e) => 'responseId' in e && e.responseId === first).map((e) => e.kind);
  t.equal(forFirst[0], 'text', 'its text first');
  t.ok(forFirst.includes('audio'), 'then its audio');
  t.equal(forFirst.at(-1), 'done', 'done last');
  const tool = hooks.events.find((e) => e.kind === 'tool') as {
    call: { responseId: string; name: string; arguments: unknown; callId: string };
  };
  t.same(tool.call, { responseId: first, callId: 'call_1_1', name: 'get_weather', arguments: { city: 'Paris' } });
  const order = hooks.kinds();
  t.ok(
    order.indexOf('tool') > order.indexOf('audio') && order.indexOf('tool') < order.indexOf('done'),
    'tool call after the speech, before done',
  );
  t.equal(hooks.samplesOf(first).length, 4 * wordSamples, 'audio length proportional to the text (4 words)');
  t.same(
    hooks.events.filter((e) => e.kind === 'text').map((e) => (e as { delta: string }).delta),
    ['Let me check that.', 'It is sunny.'],
  );
  t.equal(hooks.samplesOf(second).length, 3 * wordSamples);

  session.commitUserTurn();
  await hooks.untilKind('done', 3);
  const end = hooks.events.filter((e) => e.kind === 'tool').at(-1) as { call: { name: string; arguments: unknown } };
  t.same(
    { name: end.call.name, arguments: end.call.arguments },
    { name: 'end_conversation', arguments: {} },
    'end: the ending tool',
  );

  const before = hooks.events.length;
  session.commitUserTurn();
  t.same(
    hooks.events.slice(before),
    [{ kind: 'transcript', text: '', final: true }],
    'script over: heard nothing, says nothing',
  );
  await session.close();
});

t.test('a tool output that asks for no reply ends the turn there', async (t) => {
  const { hooks, session } = await open();
  hooks.onEvent = (e) => {
    if (e.kind === 'tool') session.submitToolOutput(e.call.callId, 'ok', false);
  };
  session.commitUserTurn();
  await hooks.untilKind('done');
  // Responses play in order: once a later one is done, anything the tool output started would have played.
  const marker = session.speak('marker');
  await hooks.untilDone(marker);
  t.equal(hooks.events.filter((e) => e.kind === 'done').length, 2, 'the turn and the marker, nothing between');
  t.notOk(hooks.events.some((e) => e.kind === 'text' && e.delta === 'It is sunny.'));
  await session.close();
});

t.test('createResponse takes the scripted responses in order, then speaks its instructions', async (t) => {
  const { hooks, session } = await open();
  const a = session.createResponse();
  const b = session.createResponse('Ask for the order number.');
  await hooks.untilDone(b);
  const texts = hooks.events.filter((e) => e.kind === 'text') as { responseId: string; delta: string }[];
  t.same(
    texts.map((x) => [x.responseId, x.delta]),
    [
      [a, 'Hello from the script.'],
      [b, 'Ask for the order number.'],
    ],
  );
  await session.close();
});

t.test('the same script gives the same events and audio every time', async (t) => {
  const run = async () => {
    const { hooks, session } = await open();
    hooks.onEvent = (e) => {
      if (e.kind === 'tool' && e.call.name === 'get_weather') session.submitToolOutput(e.call.callId, 'x', true);
    };
    for (let i = 0; i < 40; i++) session.appendAudio(frame);
    session.commitUserTurn();
    await hooks.untilKind('done', 2);
    await session.close();
    return {
      events: hooks.events,
      audio: [...hooks.audio.entries()].map(([id, a]) => [id, a.map((x) => Array.from(x))]),
    };
  };
  t.same(await run(), await run());
});

t.test(
  'the conversation settings script wins over the registry one; a bad or missing script is an EngineError',
  async (t) => {
    const { hooks, session } = await open(script, {
      scripted_engine: { turns: [{ heard: 'own script', say: 'Mine.' }] },
    });
    session.commitUserTurn();
    await hooks.untilKind('done');
    t.same(hooks.events[0], { kind: 'transcript', text: 'own script', final: true });
    await session.close();
    await t.rejects(open(script, { scripted_engine: { turns: [{ heard: 3 }] } }), {
      name: 'EngineError',
      message: /turns\.0\.heard/,
    });
    await t.rejects(open(null), EngineError);
  },
);

t.test('updateSession: recorded, and the next response speaks with the new voice and pronunciations', async (t) => {
  const local = tts();
  const asked: string[] = [];
  const engine = createScriptedEngine({
    tts: local,
    voiceFor: (id) => (asked.push(id), id === 'sarah' ? 'en-us+m3' : 'en-us'),
    log,
    script,
  });
  const hooks = new Recorder();
  const session = (await engine.open(sessionOptions({ voiceId: 'grant' }), hooks)) as ScriptedSession;
  const update = {
    systemPrompt: 'You handle billing.',
    voiceId: 'sarah',
    pronunciations: [{ word: 'SEPA', pronunciation: 'seepa' }],
  };
  session.updateSession(update);
  t.same(session.updates, [update], 'what the conversation told the engine, for tests to read');
  t.equal(session.voiceId, 'sarah');
  const id = session.speak('Pay by SEPA');
  await hooks.untilDone(id);
  t.same(asked, ['sarah']);
  const spoken = hooks.samplesOf(id);
  const expected = await local.synthesize('Pay by seepa', 'en-us+m3', 16000);
  t.ok(
    expected.length === spoken.length && expected.every((v, i) => v === spoken[i]),
    'the new voice, the word as pronounced',
  );
  const old = await local.synthesize('Pay by seepa', 'en-us', 16000);
  t.notOk(
    old.every((v, i) => v === spoken[i]),
    'not the old voice',
  );
  await session.close();
});

const said = (hooks: Recorder) =>
  hooks.events.filter((e) => e.kind === 'text').map((e) => (e as { delta: string }).delta);
const called = (hooks: Recorder) =>
  hooks.events.filter((e) => e.kind === 'tool').map((e) => (e as { call: { name: string } }).call.name);

async function openWith(s: unknown, tools: EngineTool[] = []) {
  const hooks = new Recorder();
  const engine = createScriptedEngine({ tts: tts(), voiceFor: () => 'en-us', log, script: parseScript(s) });
  const session = await engine.open(sessionOptions({ tools }), hooks);
  return { hooks, session };
}

t.test(
  'a response and its after_tool_output may call tools; a speech-only reply after the outputs says its words, calls nothing',
  async (t) => {
    const chained = {
      responses: [
        {
          say: 'Checking.',
          tool_calls: [{ name: 'hours' }],
          after_tool_output: { say: 'Booking you in.', tool_calls: [{ name: 'book' }] },
        },
      ],
    };
    for (const speechOnly of [false, true]) {
      const { hooks, session } = await openWith(chained);
      hooks.onEvent = (e) => {
        if (e.kind === 'tool')
          session.submitToolOutput(e.call.callId, 'ok', true, speechOnly ? { speechOnly: true } : undefined);
      };
      session.createResponse();
      await hooks.untilKind('done', 2);
      await new Promise((r) => setTimeout(r, 20));
      t.same(said(hooks), ['Checking.', 'Booking you in.'], 'the reply after the output is said either way');
      t.same(
        called(hooks),
        speechOnly ? ['hours'] : ['hours', 'book'],
        speechOnly ? 'speech only: no chained call' : 'the reply calls the next tool',
      );
      await session.close();
    }
  },
);

t.test('createResponse speech only: the next response is said without its calls or its end', async (t) => {
  const { hooks, session } = await openWith({
    responses: [{ say: 'One moment.', tool_calls: [{ name: 'lookup' }], end: true }],
  });
  await hooks.untilDone(session.createResponse('Say what you will do.', { speechOnly: true }));
  t.same(said(hooks), ['One moment.']);
  t.same(called(hooks), [], 'no call, no end call');
  await session.close();
});

t.test('outputs of sibling calls: a reply if any asked for one, whatever their order', async (t) => {
  const s = { responses: [{ tool_calls: [{ name: 'a' }, { name: 'b' }], after_tool_output: { say: 'Both done.' } }] };
  for (const order of [
    [true, false],
    [false, true],
    [false, false],
  ]) {
    const { hooks, session } = await openWith(s);
    let n = 0;
    hooks.onEvent = (e) => {
      if (e.kind === 'tool') session.submitToolOutput(e.call.callId, 'ok', order[n++]);
    };
    await hooks.untilDone(session.createResponse());
    const marker = session.speak('marker');
    await hooks.untilDone(marker);
    t.same(said(hooks), order.includes(true) ? ['Both done.', 'marker'] : ['marker'], `respond ${order.join(', ')}`);
    await session.close();
  }
});

t.test('a response calling a speech-suppressed tool says nothing, its end call included', async (t) => {
  const keypad = {
    name: 'keypad_input',
    description: 'Keys',
    parameters: { type: 'object' as const, properties: {} },
    speechSuppressed: true,
  };
  const end = { name: 'end_conversation', description: 'End', parameters: { type: 'object' as const, properties: {} } };
  const { hooks, session } = await openWith(
    {
      responses: [
        { say: 'Pressing one.', tool_calls: [{ name: 'keypad_input', arguments: { digits: '1' } }] },
        { say: 'Goodbye.', end: true },
        { say: 'Bye now.', end: true },
      ],
    },
    [keypad, end],
  );
  await hooks.untilDone(session.createResponse());
  await hooks.untilDone(session.createResponse());
  t.same(said(hooks), ['Goodbye.'], 'the keypad response is silent; the end without a suppressed tool speaks');
  session.updateSession({ tools: [keypad, { ...end, speechSuppressed: true }] });
  await hooks.untilDone(session.createResponse());
  t.same(said(hooks), ['Goodbye.'], 'once the end tool is suppressed (updateSession), its response is silent too');
  t.same(called(hooks), ['keypad_input', 'end_conversation', 'end_conversation']);
  await session.close();
});
