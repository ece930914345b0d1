// Turn-taking: min_words_to_interrupt, uninterruptible speech, push-to-talk and mute, say and generate_reply,
// backchannel, a backed-up client.
import t from 'tap';
import { config, setup, speak, speechFrames, tickUntil } from './harness.js';
import { until } from '../helpers/wait.js';
import { ProbeEngine } from './probe-engine.js';
import { BACKCHANNEL_TEXT } from '../../src/conversation/turn-taking.js';

t.setTimeout(120_000);

const LONG =
  'Welcome to the test line. This message is long on purpose, so that there is time to speak over it while it plays out to the caller, and then some more words to be sure.';

t.test('min_words_to_interrupt: fewer words are cancelled, enough words interrupt', async (t) => {
  const s = setup();
  await s.conv.start({
    kind: 'config',
    config: config({
      welcome_message: LONG,
      min_words_to_interrupt: 3,
      vad_prebuffer_duration_ms: 0,
      scripted_engine: { word_ms: 400, turns: [{ heard: 'one two three four five six', say: 'Okay.' }] },
    }),
  });
  await tickUntil(s, () => s.client.count('audio') >= 10, 'welcome playing');
  await speak(s, speechFrames('hello', 1000));
  t.equal(s.client.count('user_started_speaking'), 1);
  t.equal(s.client.count('input_cancelled'), 1, 'a short utterance does not interrupt: input_cancelled');
  t.equal(s.client.count('assistant_finished_speaking'), 0, 'the welcome goes on');
  const before = s.client.count('audio');
  await speak(s, speechFrames('demo-thanks', 200));
  t.equal(s.client.count('user_started_speaking'), 2);
  t.equal(s.client.count('assistant_finished_speaking'), 1, 'enough words interrupt');
  const fin = s.client.index('assistant_finished_speaking');
  const start2 = s.client.log.lastIndexOf(s.client.events('user_started_speaking')[1]);
  t.ok(fin > start2, 'the interruption follows the second user_started_speaking');
  t.ok(
    s.client.log.slice(start2, fin).filter((e) => e.type === 'audio').length > 0,
    'the assistant kept talking until the words were heard',
  );
  const nextStart = s.client.index('assistant_started_speaking', fin);
  t.equal(
    s.client.log.slice(fin, nextStart < 0 ? undefined : nextStart).filter((e) => e.type === 'audio').length,
    0,
    'no welcome audio after the interruption',
  );
  t.ok(s.client.count('audio') > before);
  await s.conv.end('user');
  t.equal(s.store.only().finish?.interruptions_count, 1);
});

t.test(
  'min_words_to_interrupt needs live words: an engine without them is barged in at once, told how much was heard',
  async (t) => {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    await s.conv.start({
      kind: 'config',
      config: config({ welcome_message: 'Welcome.', min_words_to_interrupt: 3, vad_prebuffer_duration_ms: 0 }),
    });
    const [welcome] = probe.of('speak');
    probe.say(welcome.id, 'Welcome.', 500);
    for (let i = 0; i < 25; i++) s.pacing.tick();
    let heardFrames = -1;
    await speak(s, speechFrames('hello', 300), () => {
      if (heardFrames < 0 && s.client.count('user_started_speaking') === 1) heardFrames = s.client.count('audio');
    });
    const cut = s.client.index('user_started_speaking');
    t.equal(s.client.log[cut + 1]?.type, 'assistant_finished_speaking', 'interrupted on the VAD decision');
    t.equal(s.client.count('input_cancelled'), 0);
    const [cancel] = probe.of('cancelResponse');
    t.equal(cancel?.id, welcome.id);
    t.equal(cancel?.playedMs, heardFrames * 20, 'the engine is told the audio played, frame for frame');
    await s.conv.end('user');
    t.equal(s.store.only().finish?.interruptions_count, 1);
  },
);

t.test('an uninterruptible welcome is not cut by user speech', async (t) => {
  const s = setup();
  await s.conv.start({
    kind: 'config',
    config: config({ welcome_message: LONG, is_welcome_message_interruptible: false, scripted_engine: {} }),
  });
  await tickUntil(s, () => s.client.count('audio') >= 10, 'welcome playing');
  await speak(s, speechFrames('hello', 100));
  t.equal(s.client.count('user_started_speaking'), 1);
  t.equal(s.client.count('assistant_finished_speaking'), 0);
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'the whole welcome');
  await s.conv.end('user');
  t.equal(s.store.only().finish?.interruptions_count, 0);
  t.equal(s.store.only().items[0].live_transcript, LONG);
});

t.test('push-to-talk: mute ends the turn and it is answered; without it, mute drops the turn', async (t) => {
  const ptt = setup();
  await ptt.conv.start({
    kind: 'config',
    config: config({ push_to_talk: true, scripted_engine: { turns: [{ heard: 'hello', say: 'Hi.' }] } }),
  });
  await speak(ptt, speechFrames('hello', 100));
  t.equal(ptt.client.count('user_finished_speaking'), 0, 'the VAD has not ended the turn yet');
  ptt.conv.handle({ type: 'mute' });
  t.equal(ptt.client.count('user_finished_speaking'), 1, 'releasing the button ends it');
  await until(() => ptt.client.count('input_text') === 1, { what: 'the transcript' });
  await speak(ptt, speechFrames('hello', 200));
  t.equal(ptt.client.count('user_started_speaking'), 1, 'muted audio is not heard');
  await ptt.conv.end('user');

  const plain = setup();
  await plain.conv.start({
    kind: 'config',
    config: config({ scripted_engine: { turns: [{ heard: 'hello', say: 'Hi.' }] } }),
  });
  await speak(plain, speechFrames('hello', 100));
  plain.conv.handle({ type: 'mute' });
  t.equal(plain.client.count('input_cancelled'), 1);
  t.equal(plain.client.count('input_text'), 0);
  plain.conv.handle({ type: 'unmute' });
  await speak(plain, speechFrames('hello', 1200));
  await until(() => plain.client.count('input_text') === 1, { what: 'answered after unmute' });
  await plain.conv.end('user');
});

t.test('say and generate_reply; update_system_prompt and set_external_id reach engine and store', async (t) => {
  const s = setup();
  await s.conv.start({
    kind: 'config',
    config: config({ scripted_engine: { responses: [{ say: 'Generated line.' }] } }),
  });
  s.conv.handle({ type: 'say', text: 'Said verbatim.' });
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'say');
  s.conv.handle({ type: 'generate_reply', system_message: 'Be brief.' });
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 2, 'generate_reply');
  s.conv.handle({ type: 'set_external_id', external_id: 'crm-7' });
  s.conv.handle({ type: 'update_system_prompt', system_prompt: 'New prompt' });
  await s.conv.end('user');
  const rec = s.store.only();
  t.same(
    rec.items.map((i) => i.live_transcript),
    ['Said verbatim.', 'Generated line.'],
  );
  t.ok(rec.patches.some((p) => (p as { external_id?: string }).external_id === 'crm-7'));
  t.equal(s.conv.settings?.system_prompt, 'New prompt');
});

t.test('backchannel: a short acknowledgement during long user speech', async (t) => {
  const s = setup();
  await s.conv.start({
    kind: 'config',
    config: config({
      enable_assistant_backchannel: true,
      assistant_backchannel_aggressiveness: 1,
      scripted_engine: {},
    }),
  });
  await speak(s, speechFrames('demo-thanks', 100));
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') >= 1, 'the backchannel');
  t.match(
    s.client.log
      .filter((e) => e.type === 'audio')
      .map((e) => (e as { text: string }).text)
      .join(''),
    BACKCHANNEL_TEXT,
  );
  await s.conv.end('user');
});

t.test('backchannel only when enabled; user audio keeps the client from timing out', async (t) => {
  for (const enabled of [false, true]) {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    await s.conv.start({
      kind: 'config',
      config: config({
        enable_assistant_backchannel: enabled,
        assistant_backchannel_aggressiveness: 1,
        websocket_timeout_sec: 2,
      }),
    });
    await speak(s, speechFrames('demo-thanks', 100));
    t.equal(s.conv.state, 'active', `${enabled}: 5.5 s of audio with a 2 s websocket_timeout_sec: still live`);
    const said = probe.of('speak').map((c) => c.text);
    if (enabled)
      t.ok(said.length >= 1 && said.every((x) => x === BACKCHANNEL_TEXT), `enabled: acknowledged (${said.length}x)`);
    else t.same(said, [], 'disabled: no backchannel');
    await s.conv.end('user');
  }
});

t.test('a backed-up client: frames are held, not lost, and resume in order', async (t) => {
  const s = setup();
  await s.conv.start({
    kind: 'config',
    config: config({ welcome_message: 'Hello there, this is a test.', scripted_engine: {} }),
  });
  await tickUntil(s, () => s.client.count('audio') >= 5, 'welcome playing');
  s.client.backpressure = true;
  for (let i = 0; i < 20; i++) s.pacing.tick();
  s.client.backpressure = false;
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'the rest');
  await s.conv.end('user');
  const playedMs = s.store.only().items[0].duration_ms;
  t.equal(Math.ceil(playedMs / 20), s.client.count('audio'), 'every frame sent once (the last one partly filled)');
});

t.test('audio chunks longer than the chain takes at once (100 ms) are heard whole', async (t) => {
  const s = setup();
  await s.conv.start({
    kind: 'config',
    config: config({ scripted_engine: { turns: [{ heard: 'hello', say: 'Hi.' }] } }),
  });
  const frames = speechFrames('hello', 1200);
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < frames.length; i += 5) {
    const group = frames.slice(i, i + 5);
    const c = new Uint8Array(group.reduce((n, f) => n + f.length, 0));
    group.reduce((o, f) => (c.set(f, o), o + f.length), 0);
    chunks.push(c);
  }
  for (const c of chunks) {
    s.conv.pushAudio(c);
    for (let k = 0; k < 5; k++) s.pacing.tick();
  }
  await until(() => s.client.count('input_text') === 1, { what: 'the turn answered' });
  t.equal(s.client.count('user_started_speaking'), 1);
  await s.conv.end('user');
});

t.test('a turn under way when the conversation ends is recorded, unanswered', async (t) => {
  const s = setup();
  await s.conv.start({
    kind: 'config',
    config: config({ scripted_engine: { turns: [{ heard: 'hello', say: 'Hi.' }] } }),
  });
  await speak(s, speechFrames('hello-world', 100));
  t.equal(s.client.count('user_finished_speaking'), 0, 'the VAD has not ended the turn');
  await s.conv.end('user');
  const items = s.store.only().items;
  t.same(
    items.map((i) => i.role),
    ['user'],
    'the turn is one user item, and nothing answers it',
  );
  t.ok((items[0]?.duration_ms ?? 0) >= 800, `it lasts from its start to the end (${items[0]?.duration_ms} ms)`);
});
