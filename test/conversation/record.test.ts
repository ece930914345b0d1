// The record and its audio: a stored agent (template defaults, its tools), zero data retention, observers,
// a generated welcome, a telephony start from a resolved agent; compression queued whenever the store took the
// recording (also after a cancel), not when it refused it.
import t from 'tap';
import { readdirSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { ConversationRecord } from '../../src/conversation/record.js';
import type { ConversationStore } from '../../src/conversation/host.js';
import type { CompressionJob, RecordingCompressor } from '../../src/media/recording-compressor.js';
import type { Finish, FinishOutcome, NewRecording } from '../../src/store/conversations.js';
import { config, parseScript, setup, speak, speechFrames, tickUntil } from './harness.js';
import { until } from '../helpers/wait.js';
import type { ServerEvent } from '../../src/schemas/sts.js';

t.setTimeout(120_000);

const agent = (config: Record<string, unknown>) => ({
  orgId: 'org_test',
  project: { id: 'proj_main', name: 'main' },
  agent: { id: 'agent_support', name: 'support', enabled: true },
  config,
  tools: [],
});

t.test('a stored agent: its defaults for template variables, config overrides, record names the agent', async (t) => {
  const s = setup();
  s.store.agents.set(
    'support',
    agent({ welcome_message: 'Welcome to {{shop}}.', template_variables: { shop: { default_value: 'the shop' } } }),
  );
  await s.conv.start({
    kind: 'config',
    config: config({ agent: 'support', external_id: 'ext-1', scripted_engine: {} }),
  });
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'welcome');
  await s.conv.end('user');
  const rec = s.store.only();
  t.same(rec.conversation.agent, { id: 'agent_support', name: 'support' });
  t.equal(rec.conversation.external_id, 'ext-1');
  t.equal(rec.conversation.origin, 'web');
  t.equal(rec.items[0].live_transcript, 'Welcome to the shop.');
  t.equal(rec.items[0].voice_id, 'grant');
});

t.test('a disabled agent is refused', async (t) => {
  const s = setup();
  s.store.agents.set('off', { ...agent({}), agent: { id: 'agent_off', name: 'off', enabled: false } });
  await s.conv.start({ kind: 'config', config: config({ agent: 'off' }) });
  t.equal(s.client.events('error')[0].error.code, 'agent_disabled');
});

t.test('zero data retention keeps nothing said: no recording, no transcripts, no tool call bodies', async (t) => {
  const s = setup();
  s.store.tools.set('hours', {
    id: 'tool_hours',
    name: 'hours',
    definition: {
      type: 'custom_context',
      name: 'hours',
      description: 'Opening hours',
      execution_mode: 'sync',
      context: 'We open at 9.',
    },
  });
  await s.conv.start({
    kind: 'config',
    config: config({
      data_retention_policy: { zero_data_retention: true },
      welcome_message: 'Hi.',
      tools: ['hours'],
      scripted_engine: {
        turns: [
          { heard: 'hello', say: 'We open at nine.', tool_calls: [{ name: 'hours', arguments: { day: 'monday' } }] },
        ],
      },
    }),
  });
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'welcome');
  await speak(s, speechFrames('hello', 1200));
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 2, 'the reply');
  t.equal(s.client.events('input_text')[0].text, 'hello', 'the live client still hears and sees everything');
  await s.conv.end('user');
  const rec = s.store.only();
  t.same(rec.recordings, []);
  t.notOk(
    existsSync(join(s.dataDir, 'recordings')) && readdirSync(join(s.dataDir, 'recordings')).length > 0,
    'no file written',
  );
  t.same(
    rec.items.map((i) => i.role),
    ['assistant', 'user', 'assistant'],
    'the items remain, as roles and times',
  );
  t.same(
    rec.items.map((i) => i.live_transcript),
    [null, null, null],
    'no item transcript',
  );
  t.equal(rec.finish?.live_transcript, null, 'no conversation transcript');
  const call = rec.items.flatMap((i) => i.tool_calls ?? [])[0];
  t.same(
    [call.tool.name, call.request_body, call.response_body],
    ['hours', null, null],
    'the tool call without its bodies',
  );
});

t.test('without zero data retention the same conversation keeps its transcripts and recording', async (t) => {
  const s = setup();
  await s.conv.start({
    kind: 'config',
    config: config({ welcome_message: 'Hi.', scripted_engine: { turns: [{ heard: 'hello', say: 'Yes.' }] } }),
  });
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'welcome');
  await speak(s, speechFrames('hello', 1200));
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 2, 'the reply');
  await s.conv.end('user');
  const rec = s.store.only();
  t.same(
    rec.items.map((i) => i.live_transcript),
    ['Hi.', 'hello', 'Yes.'],
  );
  t.equal(rec.finish?.live_transcript, 'assistant: Hi.\nuser: hello\nassistant: Yes.');
  t.equal(rec.recordings.length, 1);
});

// A transfer to an agent that retains nothing (src/conversation/record.ts keepNothing): the recording stops at once
// and its file goes, the stored conversation is marked zero data retention (the store then drops the text it holds:
// test/store/conversations), nothing said after it is handed to the store; a later transfer back does not undo it.
t.test(
  'a transfer to a zero data retention agent: the recording is thrown away at once, the record marked, nothing more said kept',
  async (t) => {
    const s = setup();
    const transfer = (name: string) => ({
      id: `tool_${name}`,
      name,
      definition: {
        type: 'built_in_transfer_to_agent',
        name,
        description: 'Transfer',
        execution_mode: 'sync',
        agents_to_transfer_to: ['vault', 'desk'],
      },
    });
    s.store.tools.set('to_vault', transfer('to_vault'));
    s.store.tools.set('to_desk', transfer('to_desk'));
    s.store.agents.set('vault', {
      ...agent({ data_retention_policy: { zero_data_retention: true }, tools: ['to_desk'] }),
      agent: { id: 'agent_vault', name: 'vault', enabled: true },
      tools: [transfer('to_desk')],
    });
    s.store.agents.set('desk', { ...agent({}), agent: { id: 'agent_desk', name: 'desk', enabled: true } });
    await s.conv.start({
      kind: 'config',
      config: config({
        welcome_message: 'Hi.',
        tools: ['to_vault'],
        scripted_engine: {
          responses: [
            { say: 'To the vault.', tool_calls: [{ name: 'to_vault', arguments: { agent_name: 'vault' } }] },
            { say: 'Vault here.', tool_calls: [{ name: 'to_desk', arguments: { agent_name: 'desk' } }] },
            { say: 'Desk again.' },
          ],
        },
      }),
    });
    const dir = join(s.dataDir, 'recordings');
    const files = () => (existsSync(dir) ? readdirSync(dir) : []);
    await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'welcome');
    t.equal(files().length, 1, 'recording before the transfer');
    s.conv.handle({ type: 'generate_reply' });
    await until(() => s.conv.settings?.data_retention_policy.zero_data_retention === true, {
      what: 'transferred to the vault',
    });
    await until(() => files().length === 0, { what: 'the recording file removed' });
    t.same(files(), [], 'the recording file is removed at the transfer, before the conversation ends');
    await until(
      () => s.store.only().patches.length > 0 && JSON.stringify(s.store.only().patches).includes('zero_data_retention'),
      { what: 'the record marked' },
    );
    t.same(
      s.store.only().patches.filter((p) => JSON.stringify(p).includes('data_retention_policy')),
      [{ settings: { data_retention_policy: { zero_data_retention: true } } }],
      'the stored conversation is marked zero data retention, once',
    );
    await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 2, 'the transfer line');
    s.conv.handle({ type: 'generate_reply' });
    await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 3, 'the vault agent, transferring back');
    await until(() => s.conv.settings?.data_retention_policy.zero_data_retention === false, {
      what: 'back on an agent that retains',
    });
    s.conv.handle({ type: 'generate_reply' });
    await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 4, 'the desk agent again');
    await s.conv.end('user');
    const rec = s.store.only();
    t.same(rec.recordings, [], 'no recording handed to the store');
    t.same(files(), [], 'no file in the recordings directory');
    t.equal(rec.finish?.live_transcript, null, 'no conversation transcript');
    t.same(
      rec.items.map((i) => i.live_transcript),
      ['Hi.', null, null, null],
      'only the text stored before the transfer was handed over (the store drops it)',
    );
    t.same(
      rec.items.flatMap((i) => i.tool_calls ?? []).map((c) => [c.tool.name, c.request_body, c.response_body]),
      [
        ['to_vault', null, null],
        ['to_desk', null, null],
      ],
      'no tool call bodies',
    );
  },
);

t.test('observers see events and both sides of the audio; a generated welcome', async (t) => {
  const s = setup();
  const seen: ServerEvent[] = [];
  const audio = { user: 0, assistant: 0 };
  let closedWith = '';
  await s.conv.start({
    kind: 'config',
    config: config({
      generate_welcome_message: true,
      scripted_engine: { responses: [{ say: 'Hello from the model.' }], turns: [{ heard: 'hello', say: 'Yes.' }] },
    }),
  });
  s.conv.observe({ event: (e) => seen.push(e), audio: (side) => audio[side]++, closed: (e) => (closedWith = e) });
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'generated welcome');
  t.equal(
    s.client.log
      .filter((e) => e.type === 'audio')
      .map((e) => (e as { text: string }).text)
      .join(''),
    'Hello from the model.',
  );
  await speak(s, speechFrames('hello', 1200));
  await until(() => seen.some((e) => e.type === 'input_text'), { what: 'observer transcript' });
  await s.conv.end('user');
  t.ok(audio.user > 50 && audio.assistant > 10, 'audio of both sides');
  t.ok(
    seen.some((e) => e.type === 'assistant_started_speaking') && seen.some((e) => e.type === 'user_started_speaking'),
  );
  t.equal(closedWith, 'user');
});

t.test('telephony start: a resolved agent, G.711 mu-law both ways, 160-byte frames', async (t) => {
  const s = setup({ script: parseScript({}) });
  // The state when the client is told the conversation is ready (the welcome's audio may follow at once).
  const stateWhenReady: string[] = [];
  const send = s.client.send.bind(s.client);
  s.client.send = (e) => {
    if (e.type === 'ready_to_start_conversation') stateWhenReady.push(s.conv.state);
    send(e);
  };
  await s.conv.start({
    kind: 'call',
    call: {
      conversationId: 'conv_call',
      agent: agent({ welcome_message: 'Thanks for calling.' }),
      format: 'mulaw_8000',
      configurationEndpoint: null,
      overrides: null,
      listenOnly: false,
    },
  });
  t.same(stateWhenReady, ['ready'], 'ready once the agent is resolved and the engine open');
  t.equal(s.store.active.size, 0, 'main admitted it: the conversation does not admit again');
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'welcome');
  const frames = s.client.log.filter((e) => e.type === 'audio') as { bytes: number }[];
  t.ok(frames.length > 10 && frames.every((f) => f.bytes === 160), '20 ms mu-law frames');
  await s.conv.end('user');
  t.same(s.store.only().conversation.agent, { id: 'agent_support', name: 'support' });
  t.equal(s.store.only().conversation.id, 'conv_call', 'the id main admitted');
});

t.test(
  'a wav.gz recording is queued for compression whenever the store took its row, also after a cancel',
  async (t) => {
    const cases: [string, FinishOutcome, number][] = [
      ['ended by this finish', { ended: true, recordingsStored: true }, 1],
      ['canceled meanwhile, recording stored', { ended: false, recordingsStored: true }, 1],
      ['canceled meanwhile, recordings deleted (refused)', { ended: false, recordingsStored: false }, 0],
    ];
    for (const [name, outcome, queued] of cases) {
      const finishes: { finish: Finish; recordings: NewRecording[] }[] = [];
      const store = {
        finishConversation: async (_id: string, finish: Finish, recordings: NewRecording[]) => {
          finishes.push({ finish, recordings });
          return outcome;
        },
      } as unknown as ConversationStore;
      const jobs: CompressionJob[] = [];
      const compressor = { enqueue: (job: CompressionJob) => jobs.push(job) } as unknown as RecordingCompressor;
      const record = new ConversationRecord(store, pino({ level: 'silent' }), { compressor, format: 'wav.gz' });
      record.bind('conv_rec');
      await record.openRecording(mkdtempSync(join(tmpdir(), 'parley-rec-')), 16000);
      for (let i = 0; i < 5; i++) {
        record.recordUser(new Int16Array(320).fill(1000));
        record.tick();
      }
      record.addLatency(250);
      await record.finish('user', 1000, 6000);
      t.equal(finishes.length, 1, `${name}: finished once`);
      t.match(
        finishes[0].recordings,
        [{ side: 'both', path: 'conv_rec.wav', format: 'wav', compress_to: 'wav.gz' }],
        `${name}: the .wav offered`,
      );
      t.same(finishes[0].finish.latencies_ms, [250]);
      t.equal(jobs.length, queued, `${name}: ${queued} compression queued`);
      if (queued) t.match(jobs[0], { conversationId: 'conv_rec', side: 'both', wav: 'conv_rec.wav' });
    }
  },
);
