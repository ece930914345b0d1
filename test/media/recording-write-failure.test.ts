// A recording whose file stops taking writes mid-call (here a real file size limit, `ulimit -f`, in a child
// process: its writes fail with EFBIG as on a full disk): finish() keeps the audio written before the failure as a
// shorter, playable WAV, says it is incomplete, and leaves nothing else behind.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import wavefile from 'wavefile';

const RATE = 8000;
const FRAME = 160;
const TICKS_PER_SEC = 50;
/** Stereo 16-bit at 8 kHz: one second, one block of the recorder. */
const BLOCK_BYTES = RATE * 4;
/** The child's file size limit (ulimit -f counts 1024-byte blocks): room for three whole blocks, not four. */
const LIMIT_KB = 100;
const RECORDING_MODULE = fileURLToPath(new URL('../../src/media/recording.ts', import.meta.url));

// The child records five seconds, each frame a constant identifying it (user k, assistant -k), then finishes.
const CHILD = `
import { StereoRecorder } from ${JSON.stringify(RECORDING_MODULE)};
const rec = await StereoRecorder.open(process.argv[2], { sampleRate: ${RATE}, format: 'wav' });
for (let k = 0; k < 5 * ${TICKS_PER_SEC}; k++) {
  rec.writeUser(new Int16Array(${FRAME}).fill(k + 1));
  rec.writeAssistant(new Int16Array(${FRAME}).fill(-(k + 1)));
  rec.tick();
  if (k % 10 === 9) await new Promise((r) => setTimeout(r, 1));
}
try {
  const r = await rec.finish();
  process.stdout.write(JSON.stringify({ ok: true, durationMs: r.durationMs, frames: r.frames, bytes: r.bytes, incomplete: r.incomplete?.message ?? null }));
} catch (err) {
  process.stdout.write(JSON.stringify({ ok: false, error: err.message }));
}
`;

t.test(
  'a write failing mid-call (file size limit): the whole blocks before it are kept as a playable WAV',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-rec-fail-'));
    const script = join(dir, 'child.mts');
    writeFileSync(script, CHILD);
    const out = join(dir, 'rec');
    execFileSync('mkdir', [out]);
    const wav = join(out, 'conv.wav');
    // Without the test runner's NODE_OPTIONS hooks, which write files of their own under the same limit, and with
    // SIGXFSZ ignored: the write past the limit then fails with EFBIG instead of killing the process.
    const shell = `ulimit -f ${LIMIT_KB}; trap '' XFSZ; exec env -u NODE_OPTIONS "${process.execPath}" --import tsx "${script}" "${wav}"`;
    const stdout = execFileSync('bash', ['-c', shell], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const result = JSON.parse(stdout) as {
      ok: boolean;
      durationMs: number;
      frames: number;
      bytes: number;
      incomplete: string | null;
      error?: string;
    };
    t.ok(result.ok, `finish() resolved (${result.error ?? 'no error'})`);
    t.match(
      result.incomplete,
      /writing recording .*conv\.wav/,
      'and says the recording is incomplete, with the write error',
    );
    const keptBlocks = Math.floor((LIMIT_KB * 1024 - 44) / BLOCK_BYTES);
    t.equal(keptBlocks, 3, 'the limit leaves room for three blocks');
    t.equal(result.durationMs, keptBlocks * 1000, 'three seconds kept');
    t.equal(result.frames, keptBlocks * TICKS_PER_SEC);
    t.equal(result.bytes, 44 + keptBlocks * BLOCK_BYTES);
    t.equal(statSync(wav).size, result.bytes, 'the file is cut back to them (no partial fourth block)');
    t.same(readdirSync(out), ['conv.wav'], 'nothing else is left');

    const w = new wavefile.WaveFile();
    w.fromBuffer(readFileSync(wav));
    const [left, right] = w.getSamples(false, Int16Array) as unknown as Int16Array[];
    t.equal(left.length, keptBlocks * RATE, 'the header gives the kept length');
    let misplaced = 0;
    for (let i = 0; i < left.length; i++) {
      const k = Math.floor(i / FRAME) + 1;
      if (left[i] !== k || right[i] !== -k) misplaced++;
    }
    t.equal(misplaced, 0, 'every kept sample on its channel and position');
  },
);
