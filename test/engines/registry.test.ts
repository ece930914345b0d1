import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadSettings } from '../../src/config.js';
import { EngineError } from '../../src/engines/engine.js';
import { createEngineRegistry, voiceMapper } from '../../src/engines/registry.js';
import { DEFAULT_VOICES } from '../../src/schemas/voices.js';
import { startFakeRealtimeServer } from '../fakes/realtime-server.js';
import { toneTts } from '../helpers/speech.js';
import { Recorder, sessionOptions } from './recorder.js';

t.setTimeout(60_000);
const log = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'parley-registry-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const tts = toneTts();

function registry(env: Record<string, string>) {
  const settings = loadSettings({ PARLEY_DATA_DIR: dir, ...env });
  return createEngineRegistry({ settings, log, voices: DEFAULT_VOICES, tts });
}

t.test('with no engine settings every vendor_model and the default are echo', async (t) => {
  const r = registry({});
  for (const model of [null, 'vendor_v0_5', 'vendor_v1', 'vendor_v1_1', 'vendor_unknown']) {
    t.equal(r.kindFor(model), 'echo', String(model));
    t.equal(r.engineFor(model).name, 'echo');
  }
});

t.test('per-model overrides map each vendor_model to its configured engine', async (t) => {
  const scriptFile = join(dir, 'script.json');
  writeFileSync(scriptFile, JSON.stringify({ turns: [{ heard: 'from the file', say: 'Yes.' }] }));
  const r = registry({
    PARLEY_ENGINE_DEFAULT: 'scripted',
    PARLEY_SCRIPTED_ENGINE_FILE: scriptFile,
    PARLEY_ENGINE_VENDOR_V0_5: 'echo',
    PARLEY_ENGINE_VENDOR_V1: 'openai-realtime',
    PARLEY_REALTIME_URL: 'ws://127.0.0.1:9/v1/realtime',
    PARLEY_ENGINE_VENDOR_V1_1: 'cascade',
    PARLEY_STT_BASE_URL: 'http://127.0.0.1:9/v1',
    PARLEY_TTS_BASE_URL: 'http://127.0.0.1:9/v1',
    PARLEY_LLM_BASE_URL: 'http://127.0.0.1:9/v1',
    PARLEY_LLM_MODEL: 'm',
  });
  t.same(
    [null, 'vendor_v0_5', 'vendor_v1', 'vendor_v1_1', 'other'].map((m) => r.engineFor(m).name),
    ['scripted', 'echo', 'openai-realtime', 'cascade', 'scripted'],
  );
  t.equal(r.engineFor('vendor_v1_1'), r.engineFor('vendor_v1_1'), 'one engine per kind');

  const hooks = new Recorder();
  const session = await r.engineFor(null).open(sessionOptions(), hooks);
  session.commitUserTurn();
  t.same(
    hooks.events[0],
    { kind: 'transcript', text: 'from the file', final: true },
    'the script of PARLEY_SCRIPTED_ENGINE_FILE',
  );
  await session.close();
});

t.test('a selected engine without its settings stops start-up with an EngineError naming them', async (t) => {
  t.throws(() => registry({ PARLEY_ENGINE_VENDOR_V1: 'openai-realtime' }), {
    name: 'EngineError',
    message: /PARLEY_REALTIME_URL/,
  });
  t.throws(() => registry({ PARLEY_ENGINE_DEFAULT: 'cascade', PARLEY_STT_BASE_URL: 'http://127.0.0.1:9/v1' }), {
    name: 'EngineError',
    message: /PARLEY_TTS_BASE_URL, PARLEY_LLM_BASE_URL and PARLEY_LLM_MODEL/,
  });
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, JSON.stringify({ turns: [{ say: 5 }] }));
  t.throws(() => registry({ PARLEY_ENGINE_DEFAULT: 'scripted', PARLEY_SCRIPTED_ENGINE_FILE: bad }), {
    name: 'EngineError',
    message: /bad\.json.*turns\.0\.say/,
  });
  t.throws(
    () => registry({ PARLEY_ENGINE_DEFAULT: 'scripted', PARLEY_SCRIPTED_ENGINE_FILE: join(dir, 'missing.json') }),
    EngineError,
  );
  // Without any script the scripted engine still starts; a conversation must then bring its own.
  const r = registry({ PARLEY_ENGINE_DEFAULT: 'scripted' });
  await t.rejects(r.engineFor(null).open(sessionOptions(), new Recorder()), {
    name: 'EngineError',
    message: /no script/,
  });
});

t.test("the voice catalog maps a voice id to each engine's voice", async (t) => {
  t.equal(voiceMapper(DEFAULT_VOICES, 'echo')('grant'), 'en-us+m3');
  t.equal(voiceMapper(DEFAULT_VOICES, 'scripted')('sabrina'), 'en-us+f3', 'scripted speaks with the echo voices');
  t.equal(voiceMapper(DEFAULT_VOICES, 'openai-realtime')('grant'), 'ash');
  t.equal(voiceMapper(DEFAULT_VOICES, 'cascade')('oliver'), 'fable');
  t.equal(voiceMapper(DEFAULT_VOICES, 'echo')('nobody'), 'en-us', 'unknown ids fall back');
  t.equal(voiceMapper(DEFAULT_VOICES, 'cascade')('nobody'), 'alloy');

  const fake = await startFakeRealtimeServer();
  t.teardown(() => fake.close());
  const r = registry({
    PARLEY_ENGINE_DEFAULT: 'openai-realtime',
    PARLEY_REALTIME_URL: fake.url,
    PARLEY_REALTIME_MODEL: 'rt-model',
    PARLEY_REALTIME_API_KEY: 'k',
  });
  const session = await r.engineFor(null).open(sessionOptions({ voiceId: 'maya' }), new Recorder());
  t.equal(
    (fake.events[0] as unknown as { session: { voice: string } }).session.voice,
    'coral',
    'the realtime engine speaks the mapped voice',
  );
  t.match(fake.lastUpgrade!.url, /model=rt-model/);
  await session.close();
});
