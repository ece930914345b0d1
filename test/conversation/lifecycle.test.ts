// Lifecycle endings: the configuration endpoint's outcomes, admission against the cap, the no-input poke and
// silence limit, the idle WebSocket timeout, an engine failure.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { config, setup, tickUntil } from './harness.js';
import { until } from '../helpers/wait.js';
import { EngineError, type SpeechEngine } from '../../src/engines/engine.js';
import { Conversation } from '../../src/conversation/conversation.js';
import { pino } from 'pino';

t.setTimeout(120_000);

async function endpointServer(t: { teardown(fn: () => unknown): void }) {
  const hits: { method: string; path: string; body: Record<string, unknown>; auth?: string }[] = [];
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      hits.push({ method: req.method!, path: req.url!, body: JSON.parse(data), auth: req.headers.authorization });
      if (req.url === '/error') return void res.writeHead(500).end('boom');
      if (req.url === '/invalid') return void res.writeHead(200).end('not json');
      if (req.url === '/wrong')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"vad_threshold": 7}');
      if (req.url === '/ok')
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end('{"welcome_message": "Hi {{name}} from the endpoint.", "template_variables": {"name": "Bo"}}');
      // '/slow': never answers
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
  return { hits, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

t.test('configuration endpoint: overrides applied; error, invalid response and timeout end it', async (t) => {
  const { hits, base } = await endpointServer(t);
  const ok = setup();
  await ok.conv.start({
    kind: 'config',
    config: config({
      configuration_endpoint: { url: `${base}/ok`, headers: { authorization: 'Bearer x' }, timeout_ms: 1000 },
      scripted_engine: {},
    }),
  });
  t.equal(ok.conv.state, 'ready');
  t.equal(hits[0].auth, 'Bearer x', 'configured headers sent');
  t.equal(hits[0].method, 'POST', 'called with POST');
  t.equal(hits[0].body.conversation_id, ok.conv.id, 'the context names the conversation');
  t.same(hits[0].body.project, { id: 'proj_main', name: 'main' }, 'and its project');
  await tickUntil(ok, () => ok.client.count('assistant_finished_speaking') === 1, 'welcome');
  t.equal(ok.client.events('audio_chunk').length, 0);
  t.match(
    ok.client.log
      .filter((e) => e.type === 'audio')
      .map((e) => (e as { text: string }).text)
      .join(''),
    'Hi Bo from the endpoint.',
  );
  await ok.conv.end('user');

  for (const [path, endedBy] of [
    ['/error', 'configuration_endpoint_error'],
    ['/invalid', 'configuration_endpoint_invalid_response'],
    ['/wrong', 'configuration_endpoint_invalid_response'],
  ] as const) {
    const s = setup();
    await s.conv.start({
      kind: 'config',
      config: config({ configuration_endpoint: { url: `${base}${path}`, timeout_ms: 1000 }, scripted_engine: {} }),
    });
    t.equal(await s.conv.ended, endedBy, path);
    t.equal(s.store.only().finish?.ended_by, endedBy);
    t.same(s.client.types, ['conversation_created', 'error']);
    t.equal(s.client.events('error')[0].error.code, endedBy);
  }

  const slow = setup();
  const started = slow.conv.start({
    kind: 'config',
    config: config({ configuration_endpoint: { url: `${base}/slow`, timeout_ms: 1000 }, scripted_engine: {} }),
  });
  await until(() => hits.some((h) => h.path === '/slow'), { what: 'the slow request' });
  slow.timers.advance(999);
  t.equal(slow.conv.state, 'configuring');
  slow.timers.advance(1);
  await started;
  t.equal(await slow.conv.ended, 'configuration_endpoint_timed_out');
  t.equal(slow.store.only().finish?.ended_by, 'configuration_endpoint_timed_out');
});

t.test('admission: a project at its cap refuses the conversation with no record', async (t) => {
  const s = setup();
  s.store.cap = 0;
  await s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  t.equal(s.client.events('error')[0].error.code, 'max_active_conversations_reached');
  t.equal(s.store.records.size, 0);
  t.equal(s.client.closed?.code, 1008);
  t.equal(await s.conv.ended, 'user_validation_failed');
});

t.test('unknown agent is refused', async (t) => {
  const s = setup();
  await s.conv.start({ kind: 'config', config: config({ agent: 'nobody' }) });
  t.equal(s.client.events('error')[0].error.code, 'not_found');
  t.equal(s.store.records.size, 0);
});

t.test('no input: poke text after no_input_poke_sec, then the silence limit ends it', async (t) => {
  const s = setup();
  await s.conv.start({
    kind: 'config',
    config: config({
      no_input_poke_sec: 5,
      no_input_poke_text: 'Are you there, {{name}}?',
      template_variables: { name: 'Ada' },
      no_input_end_conversation_sec: 12,
      scripted_engine: {},
    }),
  });
  s.timers.advance(4999);
  t.equal(s.client.count('assistant_started_speaking'), 0);
  s.timers.advance(1);
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'the poke');
  t.equal(
    s.client.log
      .filter((e) => e.type === 'audio')
      .map((e) => (e as { text: string }).text)
      .join(''),
    'Are you there, Ada?',
  );
  t.equal(s.conv.state, 'active');
  s.timers.advance(12_000);
  t.equal(await s.conv.ended, 'assistant_silence_limit_reached');
  t.equal(s.store.only().finish?.ended_by, 'assistant_silence_limit_reached');
});

t.test('generated poke text comes from the engine', async (t) => {
  const s = setup();
  await s.conv.start({
    kind: 'config',
    config: config({
      no_input_poke_sec: 2,
      generate_no_input_poke_text: true,
      scripted_engine: { responses: [{ say: 'Hello? Anyone?' }] },
    }),
  });
  s.timers.advance(2000);
  await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'the generated poke');
  t.equal(
    s.client.log
      .filter((e) => e.type === 'audio')
      .map((e) => (e as { text: string }).text)
      .join(''),
    'Hello? Anyone?',
  );
  await s.conv.end('user');
});

t.test('websocket_timeout_sec: an idle client ends the conversation; client messages keep it alive', async (t) => {
  const s = setup();
  await s.conv.start({ kind: 'config', config: config({ websocket_timeout_sec: 3, scripted_engine: {} }) });
  s.timers.advance(2500);
  s.conv.handle({ type: 'unmute' });
  s.timers.advance(2500);
  t.equal(s.conv.state, 'ready', 'reset by the message');
  s.timers.advance(500);
  t.equal(await s.conv.ended, 'user');
});

t.test('an engine that fails to open ends the conversation with ended_by error and a saved record', async (t) => {
  const s = setup();
  const failing: SpeechEngine = {
    name: 'broken',
    open: async () => {
      throw new EngineError('no model', 'broken');
    },
  };
  const conv = new Conversation(
    {
      client: s.client,
      store: s.store,
      engineFor: () => failing,
      timers: s.timers,
      pacing: s.pacing,
      log: pino({ level: 'silent' }),
      dataDir: s.dataDir,
      allowPrivateEndpoints: true,
      fetch: globalThis.fetch,
    },
    { orgId: 'org_test', origin: 'web' },
  );
  await conv.start({ kind: 'config', config: config({}) });
  t.equal(await conv.ended, 'error');
  t.equal(s.store.only().finish?.ended_by, 'error');
  t.equal(s.client.closed?.code, 1011);
});

t.test('canceled through the API: the next store write answers false and the conversation stops', async (t) => {
  const s = setup();
  await s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  s.store.canceled.add(s.conv.id!);
  s.conv.handle({ type: 'set_external_id', external_id: 'x' });
  t.equal(await s.conv.ended, 'user_canceled');
});

t.test('an engine error mid-conversation ends it with ended_by error and the record saved', async (t) => {
  const s = setup();
  let fail: (() => void) | null = null;
  const engine: SpeechEngine = {
    name: 'flaky',
    open: async (_o, hooks) => {
      fail = () => hooks.onError(new EngineError('lost the model', 'flaky'));
      return {
        sampleRate: 16000,
        transcribesLive: false,
        appendAudio() {},
        commitUserTurn() {},
        clearUserTurn() {},
        createResponse: () => 'r1',
        speak: () => 'r2',
        submitToolOutput() {},
        cancelResponse() {},
        updateSession() {},
        close: async () => {},
      };
    },
  };
  const conv = new Conversation(
    {
      client: s.client,
      store: s.store,
      engineFor: () => engine,
      timers: s.timers,
      pacing: s.pacing,
      log: pino({ level: 'silent' }),
      dataDir: s.dataDir,
      allowPrivateEndpoints: true,
      fetch: globalThis.fetch,
    },
    { orgId: 'org_test', origin: 'web' },
  );
  await conv.start({ kind: 'config', config: config({}) });
  t.equal(conv.state, 'ready');
  fail!();
  t.equal(await conv.ended, 'error');
  t.equal(s.store.only().finish?.ended_by, 'error');
  t.equal(s.client.events('error')[0].error.code, 'engine_error');
});

t.test('a reconnecting client takes over: later events go to the new client', async (t) => {
  const s = setup();
  await s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  const { RecordingClient } = await import('./harness.js');
  const next = new RecordingClient();
  s.conv.replaceClient(next);
  s.conv.handle({ type: 'say', text: 'Still here.' });
  await tickUntil(s, () => next.count('assistant_finished_speaking') === 1, 'speech on the new client');
  t.equal(s.client.count('assistant_started_speaking'), 0, 'nothing more to the old client');
  await s.conv.end('user');
  t.equal(next.closed?.code, 1000);
  t.equal(s.client.closed, null);
});

t.test('STS audio before ready_to_start_conversation: dropped, and the client told once', async (t) => {
  const s = setup();
  const started = s.conv.start({ kind: 'config', config: config({ scripted_engine: {} }) });
  // While the conversation starts (its settings not resolved yet): a base64 chunk and a binary frame.
  s.conv.handle({ type: 'audio_chunk', audio: Buffer.alloc(640).toString('base64') });
  s.conv.pushAudioFrame(new ArrayBuffer(640));
  await started;
  t.equal(s.conv.state, 'ready');
  t.same(
    s.client.events('warning').map((w) => w.warning.code),
    ['audio_before_ready'],
    'one warning for both',
  );
  await s.conv.end('user');
  t.equal(s.store.only().items.filter((i) => i.role === 'user').length, 0, 'no user turn from it');
});
