// The conversation engine in-process: scripted engine, in-memory store, recording client, manual clocks.
import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { config, setup, speak, speechFrames, tickUntil } from './harness.js';
import { until } from '../helpers/wait.js';

t.setTimeout(120_000);

t.test('a conversation: welcome with template variables, a user turn answered, the record', async (t) => {
  const s = setup();
  await s.conv.start({
    kind: 'config',
    config: config({
      welcome_message: 'Hello {{name}}, it is {{system_weekday}}.',
      template_variables: { name: 'Ada' },
      timezone: 'Europe/Paris',
      scripted_engine: { turns: [{ heard: 'hello world', say: 'Hi there.' }] },
    }),
  });
  t.same(s.client.types.slice(0, 2), ['conversation_created', 'ready_to_start_conversation']);
  t.equal(s.conv.state, 'ready');
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'welcome played');
  const welcomeText = s.client.log
    .filter((e) => e.type === 'audio')
    .map((e) => (e as { text: string }).text)
    .join('');
  t.equal(
    welcomeText,
    'Hello Ada, it is Sunday.',
    'template and system variables substituted (time zones: variables.test.ts)',
  );
  t.ok(
    s.client.log.filter((e) => e.type === 'audio').every((e) => (e as { bytes: number }).bytes === 640),
    '20 ms frames of pcm_16000',
  );

  await speak(s, speechFrames('hello-world'));
  await until(() => s.client.count('input_text') === 1, { what: 'input_text' });
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 2, 'reply played');
  const order = s.client.types;
  t.same(order, [
    'conversation_created',
    'ready_to_start_conversation',
    'assistant_started_speaking',
    'audio',
    'assistant_finished_speaking',
    'user_started_speaking',
    'user_finished_speaking',
    'input_text',
    'assistant_started_speaking',
    'audio',
    'assistant_finished_speaking',
  ]);
  t.same(s.client.events('input_text')[0].text, 'hello world');

  await s.conv.end('user');
  const rec = s.store.only();
  t.equal(rec.finish?.ended_by, 'user');
  t.same(
    rec.items.map((i) => [i.role, i.live_transcript]),
    [
      ['assistant', 'Hello Ada, it is Sunday.'],
      ['user', 'hello world'],
      ['assistant', 'Hi there.'],
    ],
  );
  t.equal(rec.finish?.latencies_ms?.length, 1, 'one answered turn');
  t.ok(rec.finish!.latencies_ms![0] > 0, 'latency measured from the last voiced frame');
  t.equal(rec.finish?.interruptions_count, 0);
  t.equal(rec.recordings.length, 1);
  t.ok(existsSync(join(s.dataDir, 'recordings', rec.recordings[0].path)), 'wav.gz recording written');
  t.equal(s.client.closed?.code, 1000);
  t.equal(s.conv.state, 'ended');
});

t.test('barge-in stops assistant audio within one frame and truncates the item', async (t) => {
  const s = setup();
  const long =
    'Welcome to the test line. This message is long on purpose, so that there is time to interrupt it while it plays out to the caller.';
  await s.conv.start({
    kind: 'config',
    config: config({ welcome_message: long, scripted_engine: { turns: [{ heard: 'hello', say: 'Yes?' }] } }),
  });
  await tickUntil(s, () => s.client.count('audio') >= 25, 'welcome half a second in');
  let framesWhenCut = -1;
  await speak(s, speechFrames('hello', 200), () => {
    if (framesWhenCut < 0 && s.client.count('user_started_speaking') === 1) framesWhenCut = s.client.count('audio');
  });
  const cut = s.client.index('user_started_speaking');
  t.ok(cut > 0, 'the VAD started the user turn');
  t.equal(s.client.log[cut + 1].type, 'assistant_finished_speaking', 'assistant_finished_speaking follows at once');
  const nextStart = s.client.index('assistant_started_speaking', cut);
  const between = s.client.log.slice(cut, nextStart < 0 ? undefined : nextStart);
  t.equal(
    between.filter((e) => e.type === 'audio').length,
    0,
    'not one frame of the welcome after the barge-in decision',
  );
  await s.conv.end('user');
  const rec = s.store.only();
  t.equal(rec.finish?.interruptions_count, 1);
  const welcome = rec.items[0];
  t.equal(welcome.role, 'assistant');
  t.ok(welcome.duration_ms < 4000, `truncated to what was played (${welcome.duration_ms} ms)`);
});
