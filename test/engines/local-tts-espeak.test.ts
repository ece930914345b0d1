// The local text-to-speech's espeak-ng path (src/engines/local-tts.ts): real synthesis through the echo engine,
// cached on disk and in memory per text and voice, resampled to the session rate. Every other test speaks tones
// (test/helpers/speech.ts), so this file is the one that needs espeak-ng: when it is missing, the file installs it
// (as root, from Debian) or fails saying why. It never skips.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createEchoEngine } from '../../src/engines/echo.js';
import { createLocalTts, tonePattern } from '../../src/engines/local-tts.js';
import { energy, Recorder, sessionOptions } from './recorder.js';

const ESPEAK = 'espeak-ng';
const ESPEAK_PACKAGE = 'espeak-ng';
const ROOT_UID = 0;

t.setTimeout(180_000);
const log = pino({ level: 'silent' });
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'parley-espeak-'));
  dirs.push(d);
  return d;
};
t.teardown(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function espeakRuns(): boolean {
  return spawnSync(ESPEAK, ['--version'], { stdio: 'ignore' }).status === 0;
}

function aptGet(...args: string[]) {
  return spawnSync('apt-get', args, { encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

/** espeak-ng on PATH; installed with apt-get when it is missing and this runs as root; else an error saying why. */
function requireEspeak(): void {
  if (espeakRuns()) return;
  if (process.getuid?.() !== ROOT_UID) {
    throw new Error(
      `${ESPEAK} is not on PATH and this test does not run as root to install it: apt-get install -y ${ESPEAK_PACKAGE}`,
    );
  }
  let install = aptGet('install', '-y', ESPEAK_PACKAGE);
  if (install.status !== 0) {
    aptGet('update');
    install = aptGet('install', '-y', ESPEAK_PACKAGE);
  }
  if (install.status !== 0)
    throw new Error(
      `${ESPEAK} is missing and apt-get install -y ${ESPEAK_PACKAGE} failed (${install.status}): ${install.stderr}`,
    );
  if (!espeakRuns())
    throw new Error(`apt-get installed ${ESPEAK_PACKAGE}, yet ${ESPEAK} does not run from PATH (${process.env.PATH})`);
}

t.before(requireEspeak);

t.test('echo speaks text with espeak-ng, cached on disk and in memory per text and voice', async (t) => {
  const cacheDir = tempDir();
  const tts = createLocalTts({ cacheDir });
  const engine = createEchoEngine({ tts, voiceFor: (id) => (id === 'sabrina' ? 'en-us+f3' : 'en-us'), log });
  const hooks = new Recorder();
  const session = await engine.open(sessionOptions({ voiceId: 'sabrina' }), hooks);
  const id = session.speak('Welcome to Parley. How can I help you today?');
  t.equal(hooks.events.length, 0, 'nothing happens inside the call that returns the response id');
  await hooks.untilDone(id);
  t.equal(tts.backend, 'espeak');
  t.equal(hooks.events[0].kind, 'text', 'the text comes before its audio');
  t.same(hooks.events[0], { kind: 'text', responseId: id, delta: 'Welcome to Parley. How can I help you today?' });
  const spoken = hooks.samplesOf(id);
  t.ok(spoken.length > 16000, `more than a second of speech (${spoken.length} samples at 16 kHz)`);
  t.ok(energy(spoken) > 100, 'audible');
  t.equal(tts.synthesisRuns, 1);
  t.equal(readdirSync(cacheDir).filter((f) => f.endsWith('.wav')).length, 1, 'one WAV in the disk cache');

  const again = session.speak('Welcome to Parley. How can I help you today?');
  await hooks.untilDone(again);
  t.equal(tts.synthesisRuns, 1, 'the memory cache answers the same text');
  t.same(Array.from(hooks.samplesOf(again)), Array.from(spoken));

  const fresh = createLocalTts({ cacheDir });
  const fromDisk = await fresh.synthesize('Welcome to Parley. How can I help you today?', 'en-us+f3', 16000);
  t.equal(fresh.synthesisRuns, 0, 'a new process finds it on disk');
  t.same(Array.from(fromDisk), Array.from(spoken));
  const otherVoice = await fresh.synthesize('Welcome to Parley. How can I help you today?', 'en-us+m3', 16000);
  t.equal(fresh.synthesisRuns, 1, 'another voice is another entry');
  t.not(
    otherVoice.length === spoken.length && otherVoice.every((v, i) => v === spoken[i]),
    true,
    'and sounds different',
  );
  const at8k = await fresh.synthesize('Welcome to Parley. How can I help you today?', 'en-us+f3', 8000);
  t.ok(Math.abs(at8k.length * 2 - spoken.length) <= 2, 'resampled to the session rate');
  await session.close();
});

t.test(
  'espeak-ng speech is not the tone stand-in, and a text starting with a dash is spoken, not parsed',
  async (t) => {
    const tts = createLocalTts({ cacheDir: null });
    const text = 'Welcome to Parley.';
    const spoken = await tts.synthesize(text, 'en-us', 16000);
    t.equal(tts.backend, 'espeak');
    t.not(Array.from(spoken).join(), Array.from(tonePattern(text, 16000, 'en-us')).join(), 'real speech');
    const dash = await tts.synthesize('-v is not an option here', 'en-us', 16000);
    t.ok(dash.length > 16000 / 2 && energy(dash) > 100, `spoken (${dash.length} samples)`);
    t.equal(tts.synthesisRuns, 2);
  },
);
