// Tool calls of a live conversation, driven by the scripted engine through generate_reply: webhook against a local
// HTTP server (answered and timed out), WebSocket tool (answered and timed out), context, and the built-ins.
import t from 'tap';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { config, setup, tickUntil, type Setup } from './harness.js';
import { toneTts } from '../helpers/speech.js';
import { until } from '../helpers/wait.js';
import type { SpeechEngine } from '../../src/engines/engine.js';
import { createScriptedEngine, type ScriptedSession } from '../../src/engines/scripted.js';

t.setTimeout(120_000);

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

async function webhookServer(t: { teardown(fn: () => unknown): void }, hang = false) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: data ? JSON.parse(data) : {} });
      if (hang) return;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ temperature: 21 }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { seen, port: (server.address() as AddressInfo).port };
}

/** Starts a conversation whose first generated reply says a line and calls `calls`. */
async function withReply(
  s: Setup,
  calls: { name: string; arguments: Record<string, unknown> }[],
  extra: Record<string, unknown> = {},
) {
  await s.conv.start({
    kind: 'config',
    config: config({ scripted_engine: { responses: [{ say: 'One moment.', tool_calls: calls }] }, ...extra }),
  });
  s.conv.handle({ type: 'generate_reply' });
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'reply played');
}

t.test('custom_webhook: method, body/query/path placement, headers, reserved parameters, recorded', async (t) => {
  const { seen, port } = await webhookServer(t);
  const s = setup();
  s.store.tools.set('lookup', {
    id: 'tool_lookup',
    name: 'lookup',
    definition: {
      type: 'custom_webhook',
      name: 'lookup',
      description: 'Weather',
      execution_mode: 'sync',
      parameters: [
        { type: 'string', name: 'city', is_required: true, location: 'query_string' },
        { type: 'string', name: 'id', location: 'url_path' },
        { type: 'string', name: 'note' },
      ],
      endpoint_method: 'POST',
      endpoint_url: `http://127.0.0.1:${port}/items/{id}`,
      endpoint_headers: { 'x-key': 'secret' },
      endpoint_timeout_ms: 2000,
    },
  });
  await withReply(s, [{ name: 'lookup', arguments: { city: 'Paris', id: '42', note: 'hi' } }], { tools: ['lookup'] });
  await until(() => seen.length === 1, { what: 'the webhook request' });
  await s.conv.end('user');
  const req = seen[0];
  t.equal(req.method, 'POST');
  t.equal(req.url, '/items/42?city=Paris');
  t.equal(req.headers['x-key'], 'secret');
  t.equal(req.body.note, 'hi');
  t.notOk('city' in req.body, 'query parameters are not in the body');
  t.equal(req.body.conversation_id, s.conv.id, 'reserved conversation_id injected');
  t.ok('call_info' in req.body && 'pre_tool_text' in req.body, 'every reserved parameter injected');
  const item = s.store.only().items.find((i) => i.tool_calls?.length)!;
  const call = item.tool_calls![0];
  t.equal(item.role, 'assistant');
  t.same(call.tool, { id: 'tool_lookup', name: 'lookup' });
  t.equal(call.endpoint_url, `http://127.0.0.1:${port}/items/42?city=Paris`);
  t.same(call.query_params, { city: 'Paris' });
  t.equal(call.response_status_code, 200);
  t.same(call.response_body, { temperature: 21 });
  t.equal(call.timed_out, false);
  t.equal(call.endpoint_timeout_ms, 2000);
  t.ok(call.endpoint_called_at);
});

t.test('custom_webhook: endpoint_timeout_ms elapses -> timed_out', async (t) => {
  const { seen, port } = await webhookServer(t, true);
  const s = setup();
  s.store.tools.set('slow', {
    id: 'tool_slow',
    name: 'slow',
    definition: {
      type: 'custom_webhook',
      name: 'slow',
      description: 'd',
      execution_mode: 'sync',
      parameters: [],
      endpoint_method: 'POST',
      endpoint_url: `http://127.0.0.1:${port}/slow`,
      endpoint_timeout_ms: 1500,
    },
  });
  await withReply(s, [{ name: 'slow', arguments: {} }], { tools: ['slow'] });
  await until(() => seen.length === 1, { what: 'the webhook request' });
  s.timers.advance(1500);
  await s.conv.end('user');
  const call = s.store.only().items.flatMap((i) => i.tool_calls ?? [])[0];
  t.equal(call.timed_out, true);
  t.equal(call.response_status_code, null);
  t.match(call.error_message, /1500 ms/);
});

const inlineTool = (timeout?: number) => ({
  type: 'custom_websocket' as const,
  tool_schema: {
    type: 'function' as const,
    function: {
      name: 'get_cart',
      description: 'The cart',
      parameters: { type: 'object' as const, properties: { user: { type: 'string' as const } } },
    },
  },
  ...(timeout ? { tool_call_output_timeout_ms: timeout } : {}),
});

t.test('custom_websocket: tool_call to the client, tool_call_output back, processed and recorded', async (t) => {
  const s = setup();
  await withReply(s, [{ name: 'get_cart', arguments: { user: 'ada' } }], { tools: [inlineTool()] });
  await until(() => s.client.count('tool_call') === 1, { what: 'tool_call' });
  const call = s.client.events('tool_call')[0];
  t.same({ name: call.tool_name, parameters: call.parameters }, { name: 'get_cart', parameters: { user: 'ada' } });
  s.conv.handle({ type: 'tool_call_output', tool_call_id: call.tool_call_id, output: { items: 2 } });
  t.same(s.client.events('tool_call_output_processed')[0], {
    type: 'tool_call_output_processed',
    tool_call_id: call.tool_call_id,
  });
  await s.conv.end('user');
  const entry = s.store.only().items.flatMap((i) => i.tool_calls ?? [])[0];
  t.same(entry.response_body, { items: 2 });
  t.equal(entry.timed_out, false);
  t.equal(entry.tool_call_output_timeout_ms, 5000, 'the default timeout recorded');
});

t.test('custom_websocket: no output within tool_call_output_timeout_ms -> timed_out', async (t) => {
  const s = setup();
  await withReply(s, [{ name: 'get_cart', arguments: {} }], { tools: [inlineTool(800)] });
  await until(() => s.client.count('tool_call') === 1, { what: 'tool_call' });
  s.timers.advance(799);
  t.equal(s.client.count('tool_call_output_processed'), 0);
  s.timers.advance(1);
  const late = s.client.events('tool_call')[0].tool_call_id;
  s.conv.handle({ type: 'tool_call_output', tool_call_id: late, output: 'late' });
  t.equal(s.client.events('warning').length, 1, 'a late output is refused with a warning');
  await s.conv.end('user');
  const entry = s.store.only().items.flatMap((i) => i.tool_calls ?? [])[0];
  t.equal(entry.timed_out, true);
  t.equal(entry.tool_call_output_timeout_ms, 800);
});

t.test('custom_context and keypad input', async (t) => {
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
  s.store.tools.set('keypad', {
    id: 'tool_keypad',
    name: 'keypad',
    definition: { type: 'built_in_keypad_input', name: 'keypad', description: 'Press keys', execution_mode: 'sync' },
  });
  await withReply(
    s,
    [
      { name: 'hours', arguments: {} },
      { name: 'keypad', arguments: { digits: '12#' } },
    ],
    { tools: ['hours', 'keypad'] },
  );
  await until(() => s.client.count('dtmf') === 1, { what: 'dtmf' });
  t.same(s.client.events('dtmf')[0], { type: 'dtmf', digits: '12#' });
  await s.conv.end('user');
  const calls = s.store.only().items.flatMap((i) => i.tool_calls ?? []);
  t.same(calls.map((c) => c.tool.name).sort(), ['hours', 'keypad']);
  t.same(calls.find((c) => c.tool.name === 'hours')!.response_body, { context: 'We open at 9.' });
});

t.test('natural conversation ending: assistant_ended_conversation after the goodbye, ended_by assistant', async (t) => {
  const s = setup();
  s.store.tools.set('end_conversation', {
    id: 'tool_end',
    name: 'end_conversation',
    definition: {
      type: 'built_in_natural_conversation_ending',
      name: 'end_conversation',
      description: 'End',
      execution_mode: 'sync',
    },
  });
  await s.conv.start({
    kind: 'config',
    config: config({ tools: ['end_conversation'], scripted_engine: { responses: [{ say: 'Goodbye.', end: true }] } }),
  });
  s.conv.handle({ type: 'generate_reply' });
  await tickUntil(s, () => s.conv.state === 'ended' || s.conv.state === 'ending', 'the end');
  t.equal(await s.conv.ended, 'assistant');
  const types = s.client.types;
  t.ok(
    types.indexOf('assistant_ended_conversation') > types.indexOf('assistant_finished_speaking'),
    'ended after the goodbye played',
  );
  t.equal(s.store.only().finish?.ended_by, 'assistant');
});

t.test('choose not to respond, and transfer to agent', async (t) => {
  const s = setup();
  s.store.tools.set('quiet', {
    id: 'tool_quiet',
    name: 'quiet',
    definition: {
      type: 'built_in_choose_not_to_respond',
      name: 'quiet',
      description: 'Say nothing',
      execution_mode: 'sync',
    },
  });
  s.store.tools.set('to_billing', {
    id: 'tool_tr',
    name: 'to_billing',
    definition: {
      type: 'built_in_transfer_to_agent',
      name: 'to_billing',
      description: 'Transfer',
      execution_mode: 'sync',
      agents_to_transfer_to: ['billing'],
    },
  });
  s.store.agents.set('billing', {
    orgId: 'org_test',
    project: { id: 'proj_main', name: 'main' },
    agent: { id: 'agent_billing', name: 'billing', enabled: true },
    config: { system_prompt: 'You handle billing.', voice_id: 'sarah' },
    tools: [],
  });
  await s.conv.start({
    kind: 'config',
    config: config({
      tools: ['quiet', 'to_billing'],
      scripted_engine: {
        responses: [
          { tool_calls: [{ name: 'quiet', arguments: {} }] },
          { say: 'Transferring.', tool_calls: [{ name: 'to_billing', arguments: { agent_name: 'billing' } }] },
        ],
      },
    }),
  });
  s.conv.handle({ type: 'generate_reply' });
  await until(() => s.client.count('assistant_chose_not_to_respond') === 1, { what: 'chose not to respond' });
  s.conv.handle({ type: 'generate_reply' });
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'transfer line played');
  await until(() => s.conv.settings?.system_prompt === 'You handle billing.', { what: 'agent switched' });
  t.equal(s.conv.settings?.voice_id, 'sarah');
  await s.conv.end('user');
  const calls = s.store.only().items.flatMap((i) => i.tool_calls ?? []);
  t.same(calls.find((c) => c.tool.name === 'to_billing')!.response_body, { transferred_to: 'billing' });
  t.ok(
    calls.find((c) => c.tool.name === 'quiet'),
    'choose-not-to-respond recorded',
  );
});

t.test(
  'transfer to agent: the engine gets the new voice and speech settings; replies after it speak and are recorded with them',
  async (t) => {
    // The scripted engine, its session kept, and the engine voice of every response it speaks.
    const tts = toneTts();
    const spokenWith: string[] = [];
    const voiceFor = (id: string) => (spokenWith.push(id), id === 'sarah' ? 'en-us+m3' : 'en-us');
    const scripted = createScriptedEngine({ tts, voiceFor, log: pino({ level: 'silent' }), script: null });
    let session: ScriptedSession | null = null;
    const engine: SpeechEngine = {
      name: 'scripted',
      open: async (o, h) => (session = (await scripted.open(o, h)) as ScriptedSession),
    };
    const s = setup({ engine });
    s.store.tools.set('to_billing', {
      id: 'tool_tr',
      name: 'to_billing',
      definition: {
        type: 'built_in_transfer_to_agent',
        name: 'to_billing',
        description: 'Transfer',
        execution_mode: 'sync',
        agents_to_transfer_to: ['billing'],
      },
    });
    const hours = {
      id: 'tool_hours',
      name: 'hours',
      definition: {
        type: 'custom_context',
        name: 'hours',
        description: 'Opening hours',
        execution_mode: 'sync',
        context: 'We open at 9.',
      },
    };
    s.store.agents.set('billing', {
      orgId: 'org_test',
      project: { id: 'proj_main', name: 'main' },
      agent: { id: 'agent_billing', name: 'billing', enabled: true },
      config: {
        system_prompt: 'You handle billing.',
        voice_id: 'sarah',
        audio_speed: 1.5,
        default_language: 'fr',
        additional_languages: ['de'],
        boosted_keywords: ['invoice'],
        pronunciation_dictionary: [{ word: 'SEPA', pronunciation: 'seepa' }],
        tools: ['hours'],
      },
      tools: [hours],
    });
    s.store.agents.set('front', {
      orgId: 'org_test',
      project: { id: 'proj_main', name: 'main' },
      agent: { id: 'agent_front', name: 'front', enabled: true },
      config: { system_prompt: 'Front desk.', voice_id: 'grant', tools: ['to_billing'] },
      tools: [],
    });
    await s.conv.start({
      kind: 'config',
      config: config({
        agent: 'front',
        scripted_engine: {
          responses: [
            { say: 'Transferring.', tool_calls: [{ name: 'to_billing', arguments: { agent_name: 'billing' } }] },
            { say: 'Billing here.' },
          ],
        },
      }),
    });
    s.conv.handle({ type: 'generate_reply' });
    await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'transfer line played');
    await until(() => session!.updates.length === 1, { what: 'the engine told of the transfer' });
    const update = session!.updates[0];
    t.same(
      {
        voiceId: update.voiceId,
        defaultLanguage: update.defaultLanguage,
        additionalLanguages: update.additionalLanguages,
        boostedKeywords: update.boostedKeywords,
        pronunciations: update.pronunciations,
      },
      {
        voiceId: 'sarah',
        defaultLanguage: 'fr',
        additionalLanguages: ['de'],
        boostedKeywords: ['invoice'],
        pronunciations: [{ word: 'SEPA', pronunciation: 'seepa' }],
      },
      "the new agent's voice and speech settings",
    );
    t.equal(update.systemPrompt, 'You handle billing.');
    t.same(
      update.tools?.map((x) => x.name),
      ['hours'],
      "the new agent's tools, and only those",
    );
    t.equal(session!.voiceId, 'sarah', 'the session speaks with the new voice');
    t.same(s.conv.settings?.tools, ['hours']);
    t.equal(s.conv.settings?.vendor_model, null, 'the engine the conversation runs stays');

    s.conv.handle({ type: 'generate_reply' });
    await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 2, 'the new agent spoke');
    t.same(spokenWith, ['grant', 'sarah'], 'the reply after the transfer is synthesized with the new voice');
    await s.conv.end('user');
    const record = s.store.only();
    const after = record.items.find((i) => i.live_transcript === 'Billing here.')!;
    t.equal(after.voice_id, 'sarah', 'its item records the new voice');
    t.equal(after.audio_speed, 1.5, 'and the new speed');
    const synthesized = (await tts.synthesize('Billing here.', 'en-us+m3', 16000)).length;
    t.ok(
      Math.abs(after.duration_ms - synthesized / 16 / 1.5) < 60,
      `played at 1.5x: ${after.duration_ms} ms for ${synthesized / 16} ms of speech`,
    );
    t.same(
      record.conversation.agent,
      { id: 'agent_front', name: 'front' },
      'the record keeps the agent the conversation started with',
    );
    const line = record.items.find((i) => i.live_transcript === 'Transferring.')!;
    t.same(
      [line.voice_id, line.audio_speed],
      ['grant', 1],
      'the transfer line is recorded with the voice and speed it played with, not those in force when its item was written',
    );
  },
);
