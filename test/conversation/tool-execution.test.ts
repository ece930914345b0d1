// How tool calls reach back to the engine: sync and async execution, the speech flags
// (forbid_speech_after_tool_call, wait_for_response), choose not to respond with and without respond_after_sec, and
// transfer to agent (allowed targets, the new agent's prompt, voice and language to the engine, its VAD timing). Driven by a probe
// engine that records every session call, with manual clocks.
import t from 'tap';
import type { SessionUpdate, SpeechEngine } from '../../src/engines/engine.js';
import { config, setup, speak, speechFrames, type Setup } from './harness.js';
import { until } from '../helpers/wait.js';
import { ProbeEngine } from './probe-engine.js';

t.setTimeout(120_000);

const inline = (name: string, extra: Record<string, unknown> = {}) => ({
  type: 'custom_websocket' as const,
  tool_schema: {
    type: 'function' as const,
    function: { name, description: name, parameters: { type: 'object' as const, properties: {} } },
  },
  ...extra,
});

async function started(extra: Record<string, unknown>): Promise<{ s: Setup; probe: ProbeEngine }> {
  const probe = new ProbeEngine();
  const s = setup({ engine: probe });
  await s.conv.start({ kind: 'config', config: config({ ...extra }) });
  if (s.conv.state !== 'ready') throw new Error(`conversation not ready: ${s.conv.state}`);
  return { s, probe };
}

/** The client answers the tool call it was sent. */
function answer(s: Setup, output: unknown): void {
  const call = s.client.events('tool_call').at(-1)!;
  s.conv.handle({ type: 'tool_call_output', tool_call_id: call.tool_call_id, output });
}

t.test(
  'sync tool: the output goes back once answered, with a reply; forbid_speech_after_tool_call: without one',
  async (t) => {
    const { s, probe } = await started({
      tools: [inline('plain'), inline('quiet_after', { forbid_speech_after_tool_call: true })],
    });
    probe.toolCall({ responseId: 'resp_x', callId: 'c1', name: 'plain', arguments: {} });
    t.same(probe.of('submitToolOutput'), [], 'nothing before the client answers');
    answer(s, { ok: 1 });
    await new Promise((r) => setImmediate(r));
    t.same(probe.of('submitToolOutput'), [
      { kind: 'submitToolOutput', callId: 'c1', output: '{"ok":1}', respond: true },
    ]);

    probe.toolCall({ responseId: 'resp_y', callId: 'c2', name: 'quiet_after', arguments: {} });
    answer(s, 'done');
    await new Promise((r) => setImmediate(r));
    t.same(
      probe.of('submitToolOutput')[1],
      { kind: 'submitToolOutput', callId: 'c2', output: 'done', respond: false },
      'forbidden speech: respond false',
    );
    await s.conv.end('user');
  },
);

t.test(
  'async tool: started at once; the result joins the context, and a reply follows only with wait_for_response',
  async (t) => {
    const { s, probe } = await started({
      tools: [
        inline('background', { execution_mode: 'async' }),
        inline('background_reply', { execution_mode: 'async', wait_for_response: true }),
      ],
    });
    probe.toolCall({ responseId: 'resp_x', callId: 'c1', name: 'background', arguments: {} });
    t.same(
      probe.of('submitToolOutput'),
      [{ kind: 'submitToolOutput', callId: 'c1', output: '{"status":"started"}', respond: true }],
      'answered before the tool ran',
    );
    answer(s, 'sunny');
    await new Promise((r) => setImmediate(r));
    t.equal(probe.of('submitToolOutput').length, 1, 'no second output for the same call');
    t.same(
      probe.of('updateSession').map((c) => c.update.systemMessage),
      ['Result of background: sunny'],
    );
    t.equal(probe.of('createResponse').length, 0, 'no reply without wait_for_response');

    probe.toolCall({ responseId: 'resp_y', callId: 'c2', name: 'background_reply', arguments: {} });
    answer(s, 'rain');
    await new Promise((r) => setImmediate(r));
    t.same(
      probe.of('updateSession').map((c) => c.update.systemMessage),
      ['Result of background: sunny', 'Result of background_reply: rain'],
    );
    t.equal(probe.of('createResponse').length, 1, 'wait_for_response: the assistant replies with the result');
    await s.conv.end('user');
    const calls = s.store.only().items.flatMap((i) => i.tool_calls ?? []);
    t.same(
      calls.map((c) => [c.tool.name, c.response_body]),
      [
        ['background', { output: 'sunny' }],
        ['background_reply', { output: 'rain' }],
      ],
      'both recorded',
    );
  },
);

const quietTool = (respondAfterSec: number | null) => ({
  id: 'tool_quiet',
  name: 'quiet',
  definition: {
    type: 'built_in_choose_not_to_respond',
    name: 'quiet',
    description: 'Say nothing',
    execution_mode: 'sync',
    respond_after_sec: respondAfterSec,
  },
});

/** A started conversation with the `quiet` tool (respond_after_sec as given) whose first reply is under way. */
async function startWithQuietTool(respondAfterSec: number | null, fields: Parameters<typeof config>[0] = {}) {
  const probe = new ProbeEngine();
  const s = setup({ engine: probe });
  s.store.tools.set('quiet', quietTool(respondAfterSec));
  await s.conv.start({ kind: 'config', config: config({ tools: ['quiet'], ...fields }) });
  s.conv.handle({ type: 'generate_reply' });
  return { probe, s };
}

t.test(
  'choose not to respond: the response is dropped unheard; respond_after_sec brings a follow-up when the user stays silent',
  async (t) => {
    const { probe, s } = await startWithQuietTool(3);
    const [reply] = probe.of('createResponse');
    probe.toolCall({ responseId: reply.id, callId: 'c1', name: 'quiet', arguments: {} });
    t.equal(s.client.count('assistant_chose_not_to_respond'), 1);
    t.same(
      probe.of('cancelResponse'),
      [{ kind: 'cancelResponse', id: reply.id, playedMs: 0 }],
      'the engine stops the response',
    );
    probe.say(reply.id, 'This should not be heard.');
    for (let i = 0; i < 10; i++) s.pacing.tick();
    t.equal(s.client.count('audio'), 0, 'no audio of the dropped response');
    t.equal(s.client.count('assistant_started_speaking') + s.client.count('assistant_finished_speaking'), 0);

    s.timers.advance(3000 - 10 * 20 - 1);
    t.equal(probe.of('createResponse').length, 1, 'no follow-up before respond_after_sec');
    s.timers.advance(1);
    t.equal(probe.of('createResponse').length, 2, 'a follow-up once respond_after_sec has passed in silence');
    const followUp = probe.of('createResponse')[1];
    probe.say(followUp.id, 'Still there?');
    for (let i = 0; i < 10; i++) s.pacing.tick();
    t.equal(s.client.count('assistant_finished_speaking'), 1, 'the follow-up is heard');
    await s.conv.end('user');
    const items = s.store.only().items;
    t.same(
      items.map((i) => i.live_transcript),
      [null, 'Still there?'],
      'the dropped response left an empty item; the follow-up its text',
    );
  },
);

t.test('choose not to respond: the user speaking before respond_after_sec drops the follow-up', async (t) => {
  const { probe, s } = await startWithQuietTool(3);
  probe.toolCall({ responseId: probe.of('createResponse')[0].id, callId: 'c1', name: 'quiet', arguments: {} });
  await speak(s, speechFrames('hello', 1200));
  t.equal(s.client.count('user_finished_speaking'), 1, 'the user spoke and finished, within the 3 s');
  s.timers.advance(5000);
  t.equal(probe.of('createResponse').length, 1, 'no follow-up: the user did not stay silent');
  await s.conv.end('user');
});

t.test(
  'choose not to respond: respond_after_sec null stays silent; a pending follow-up dies with the conversation',
  async (t) => {
    const { probe: silent, s: a } = await startWithQuietTool(null, {
      websocket_timeout_sec: 3600,
      no_input_end_conversation_sec: 3600,
    });
    silent.toolCall({ responseId: silent.of('createResponse')[0].id, callId: 'c1', name: 'quiet', arguments: {} });
    a.timers.advance(600_000);
    t.equal(a.conv.state, 'ready', 'still live ten minutes later');
    t.equal(silent.of('createResponse').length, 1, 'no follow-up, ever');
    await a.conv.end('user');

    const { probe: later, s: b } = await startWithQuietTool(30);
    later.toolCall({ responseId: later.of('createResponse')[0].id, callId: 'c1', name: 'quiet', arguments: {} });
    await b.conv.end('user');
    t.equal(b.timers.pending, 0, 'ending clears every timer, the follow-up too');
    b.timers.advance(60_000);
    t.equal(later.of('createResponse').length, 1, 'no follow-up after the end');
  },
);

t.test(
  'transfer to agent: a target outside agents_to_transfer_to is refused; an allowed one gets its prompt to the engine',
  async (t) => {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    s.store.tools.set('transfer', {
      id: 'tool_tr',
      name: 'transfer',
      definition: {
        type: 'built_in_transfer_to_agent',
        name: 'transfer',
        description: 'Transfer',
        execution_mode: 'sync',
        agents_to_transfer_to: ['billing'],
      },
    });
    const agent = (name: string, prompt: string) => ({
      orgId: 'org_test',
      project: { id: 'proj_main', name: 'main' },
      agent: { id: `agent_${name}`, name, enabled: true },
      config: { system_prompt: prompt, timezone: 'Asia/Tokyo', voice_id: 'sarah', default_language: 'de' },
      tools: [],
    });
    s.store.agents.set('billing', agent('billing', 'Billing on {{system_conversation_timezone}}.'));
    s.store.agents.set('sales', agent('sales', 'Sales.'));
    await s.conv.start({ kind: 'config', config: config({ system_prompt: 'Front desk.', tools: ['transfer'] }) });
    probe.toolCall({ responseId: 'r1', callId: 'c1', name: 'transfer', arguments: { agent_name: 'sales' } });
    await new Promise((r) => setImmediate(r));
    t.equal(s.conv.settings?.system_prompt, 'Front desk.', 'not a transfer target: nothing changes');
    t.match(probe.of('submitToolOutput')[0].output, /transfer refused/);
    probe.toolCall({ responseId: 'r2', callId: 'c2', name: 'transfer', arguments: { agent_name: 'billing' } });
    await until(() => probe.of('submitToolOutput').length >= 2, { what: 'the output of the second transfer' });
    t.same(
      probe.of('updateSession').map((c) => c.update.systemPrompt),
      ['Billing on Asia/Tokyo.'],
      "the new agent's prompt, resolved in its time zone",
    );
    t.same(probe.of('updateSession')[0].update.tools, [], "the new agent's tools");
    t.same(
      [probe.of('updateSession')[0].update.voiceId, probe.of('updateSession')[0].update.defaultLanguage],
      ['sarah', 'de'],
      "the new agent's voice and language",
    );
    t.equal(s.conv.settings?.voice_id, 'sarah', 'an engine that does not report its voice is taken to have changed it');
    await s.conv.end('user');
    const calls = s.store.only().items.flatMap((i) => i.tool_calls ?? []);
    t.match(
      calls.find((c) => (c.request_body as { agent_name?: string }).agent_name === 'sales')?.error_message,
      /not a transfer target/,
    );
    t.same(calls.find((c) => (c.request_body as { agent_name?: string }).agent_name === 'billing')?.response_body, {
      transferred_to: 'billing',
    });
  },
);

const transferTool = {
  id: 'tool_tr',
  name: 'transfer',
  definition: {
    type: 'built_in_transfer_to_agent',
    name: 'transfer',
    description: 'Transfer',
    execution_mode: 'sync',
    agents_to_transfer_to: ['billing'],
  },
};
const billing = (config: Record<string, unknown>) => ({
  orgId: 'org_test',
  project: { id: 'proj_main', name: 'main' },
  agent: { id: 'agent_billing', name: 'billing', enabled: true },
  config,
  tools: [],
});

/** Hands a transfer call to the conversation and waits for its output to reach the engine. */
async function transfer(s: Setup, probe: ProbeEngine, responseId: string): Promise<void> {
  const before = probe.of('submitToolOutput').length;
  probe.toolCall({ responseId, callId: `c_${responseId}`, name: 'transfer', arguments: { agent_name: 'billing' } });
  await until(() => probe.of('submitToolOutput').length > before, { what: 'the transfer tool output' });
  if (s.conv.settings?.system_prompt !== 'Billing.') throw new Error('the transfer did not happen');
}

/** The probe, reporting the voice it speaks with as real engines do; `voice.now` lets the test have it go back on a change. */
function voiceReporting(probe: ProbeEngine): { engine: SpeechEngine; voice: { now: string } } {
  const voice = { now: '' };
  const engine: SpeechEngine = {
    name: 'probe',
    open: async (options, hooks) => {
      const inner = await probe.open(options, hooks);
      voice.now = options.voiceId;
      const updateSession = (update: SessionUpdate) => {
        inner.updateSession(update);
        if (update.voiceId !== undefined) voice.now = update.voiceId;
      };
      return Object.defineProperty({ ...inner, updateSession }, 'voiceId', { get: () => voice.now });
    },
  };
  return { engine, voice };
}

t.test(
  'transfer to agent: each item records the voice and speed its utterance was heard with, an engine refusing the voice a moment later too',
  async (t) => {
    const probe = new ProbeEngine();
    const { engine, voice } = voiceReporting(probe);
    const s = setup({ engine });
    s.store.tools.set('transfer', transferTool);
    s.store.agents.set('billing', billing({ system_prompt: 'Billing.', voice_id: 'sarah', audio_speed: 1.5 }));
    await s.conv.start({ kind: 'config', config: config({ voice_id: 'grant', tools: ['transfer'] }) });
    const playOut = (n: number) => {
      for (let i = 0; i < 50 && s.client.count('assistant_finished_speaking') < n; i++) s.pacing.tick();
    };

    // A response asked for before the transfer, its audio after it: the engine speaks it with the voice it started with.
    s.conv.handle({ type: 'generate_reply' });
    const line = probe.of('createResponse')[0].id;
    await transfer(s, probe, line);
    t.equal(voice.now, 'sarah', 'the engine took the new voice');
    probe.say(line, 'Transferring.');
    playOut(1);

    // The engine goes back on the change after the next response was asked for, before its audio (openai-realtime:
    // cannot_update_voice crossing our update): that response speaks with the old voice.
    s.conv.handle({ type: 'generate_reply' });
    const next = probe.of('createResponse')[1].id;
    voice.now = 'grant';
    probe.say(next, 'Billing here.');
    playOut(2);
    t.equal(s.client.count('assistant_finished_speaking'), 2, 'both played');
    await s.conv.end('user');

    const items = s.store.only().items;
    const heard = (text: string) =>
      items.filter((i) => i.live_transcript === text).map((i) => [i.voice_id, i.audio_speed]);
    t.same(
      heard('Transferring.'),
      [['grant', 1.5]],
      'the transfer line: the old voice it started with; its audio, queued on a quiet playout after the transfer, played at the new speed',
    );
    t.same(
      heard('Billing here.'),
      [['grant', 1.5]],
      'the reply after the refusal: the voice the engine kept, not the one the settings still name',
    );
    t.equal(
      s.conv.settings?.voice_id,
      'sarah',
      'the settings still name the new voice (the refusal came after the transfer)',
    );
  },
);

t.test(
  'transfer to agent: the silence limit follows the new agent, counting from the transfer; the conversation ends on its schedule',
  async (t) => {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    s.store.tools.set('transfer', transferTool);
    s.store.agents.set(
      'billing',
      billing({ system_prompt: 'Billing.', no_input_end_conversation_sec: 4, websocket_timeout_sec: 3600 }),
    );
    await s.conv.start({
      kind: 'config',
      config: config({ tools: ['transfer'], no_input_end_conversation_sec: 10, websocket_timeout_sec: 3600 }),
    });
    // No welcome message: the silence counts from the start.
    s.timers.advance(8000);
    await transfer(s, probe, 'resp_x');
    s.timers.advance(2000);
    t.equal(s.conv.state, 'ready', "still live at the old agent's 10 s");
    s.timers.advance(4000 - 2000 - 1);
    t.equal(
      s.conv.state,
      'ready',
      "still live 1 ms before the new agent's 4 s from the transfer (not from the silence's start: that would have ended it at the transfer)",
    );
    s.timers.advance(1);
    t.equal(await s.conv.ended, 'assistant_silence_limit_reached', 'ended 4 s after the transfer');
    t.equal(s.store.only().finish?.ended_by, 'assistant_silence_limit_reached');
  },
);

t.test(
  "transfer to agent: the new agent's vad_min_silence_duration_ms decides when the user's turn ends (in frames)",
  async (t) => {
    // The frame (20 ms, counted from the first user frame) after which user_finished_speaking came.
    const finishedAt = async (
      first: Record<string, unknown>,
      transferTo: Record<string, unknown> | null,
    ): Promise<number> => {
      const probe = new ProbeEngine();
      const s = setup({ engine: probe });
      s.store.tools.set('transfer', transferTool);
      s.store.agents.set('billing', billing({ system_prompt: 'Billing.', ...transferTo }));
      await s.conv.start({ kind: 'config', config: config({ tools: ['transfer'], ...first }) });
      if (transferTo) await transfer(s, probe, 'resp_x');
      let at = -1;
      await speak(s, speechFrames('vm-goodbye'), (i) => {
        if (at < 0 && s.client.count('user_finished_speaking') > 0) at = i;
      });
      await s.conv.end('user');
      return at;
    };
    const stayed = await finishedAt({ vad_min_silence_duration_ms: 800 }, null);
    const transferred = await finishedAt({ vad_min_silence_duration_ms: 800 }, { vad_min_silence_duration_ms: 200 });
    const startedWith = await finishedAt({ vad_min_silence_duration_ms: 200 }, null);
    t.ok(stayed > 0, `the turn ended at frame ${stayed} without a transfer`);
    t.equal(stayed - transferred, 30, 'after the transfer: 600 ms (30 frames) sooner');
    t.equal(transferred, startedWith, 'as soon as with the new agent from the start');
  },
);

t.test(
  'transfer to agent: an agent whose vad_* the VAD refuses (prebuffer over 10 s) is not transferred to; nothing changes',
  async (t) => {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    s.store.tools.set('transfer', transferTool);
    s.store.agents.set('billing', billing({ system_prompt: 'Billing.', vad_prebuffer_duration_ms: 20_000 }));
    await s.conv.start({ kind: 'config', config: config({ system_prompt: 'Front desk.', tools: ['transfer'] }) });
    probe.toolCall({ responseId: 'r1', callId: 'c1', name: 'transfer', arguments: { agent_name: 'billing' } });
    await until(() => probe.of('submitToolOutput').length === 1, { what: 'the tool output' });
    t.match(probe.of('submitToolOutput')[0].output, /VAD settings out of range/);
    t.equal(s.conv.settings?.system_prompt, 'Front desk.', 'the old agent stays');
    t.equal(s.conv.settings?.vad_prebuffer_duration_ms, 500);
    await s.conv.end('user');
  },
);
