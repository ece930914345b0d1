import t from 'tap';
import { readFileSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pako from 'pako';
import wavefile from 'wavefile';
import { Transform } from 'node:stream';
import { RecordingError, StereoRecorder } from '../../src/media/recording.js';
import { FRAME_MS } from '../../src/media/format.js';
import { compressRecording } from '../../src/media/recording-compressor.js';
import { until } from '../helpers/wait.js';

const RATE = 8000;
const FRAME = 160;

function frameOf(k: number, base: number): Int16Array {
  // Each frame a constant value identifying it, so the file's contents can be traced back.
  return new Int16Array(FRAME).fill(base + k);
}

/** Records `ticks` frames: the user side arrives in bursts (2 frames every other tick), the assistant speaks in
 *  ticks 50..99 only. Returns what each channel should hold. */
async function record(path: string, format: 'wav' | 'wav.gz', ticks: number) {
  const rec = await StereoRecorder.open(path, { sampleRate: RATE, format });
  let userK = 0;
  for (let i = 0; i < ticks; i++) {
    if (i % 2 === 0) {
      rec.writeUser(frameOf(userK++, 1000));
      rec.writeUser(frameOf(userK++, 1000));
    }
    if (i >= 50 && i < 100) rec.writeAssistant(frameOf(i, -5000));
    rec.tick();
  }
  return rec.finish();
}

function channels(bytes: Uint8Array) {
  const w = new wavefile.WaveFile();
  w.fromBuffer(bytes);
  const fmt = w.fmt as { numChannels: number; sampleRate: number; bitsPerSample: number };
  const samples = w.getSamples(false, Int16Array) as unknown as Int16Array[];
  return { fmt, left: samples[0], right: samples[1] };
}

t.test('stereo WAV: both sides aligned on the tick timeline, readable, correct length', async (t) => {
  const dir = t.testdir({});
  const ticks = 165; // 3.3 s: three full one-second blocks and a partial one
  const res = await record(join(dir, 'call.wav'), 'wav', ticks);
  // The last burst (tick 164) brought frames 164 and 165: the one still held when it finished is kept.
  const frames = ticks + 1;
  t.equal(res.frames, frames);
  t.equal(res.durationMs, 3320);
  t.equal(res.droppedMs, 0);
  const bytes = readFileSync(res.path);
  t.equal(bytes.length, 44 + frames * FRAME * 4, 'header + 2 channels x 16 bit');
  t.equal(res.bytes, bytes.length);
  const { fmt, left, right } = channels(bytes);
  t.same([fmt.numChannels, fmt.sampleRate, fmt.bitsPerSample], [2, RATE, 16]);
  t.equal(left.length, frames * FRAME, 'length of the call, and the frame held at its end');
  for (const k of [0, 1, 2, 77, 164, 165]) t.equal(left[k * FRAME + 5], 1000 + k, `user frame ${k} on tick ${k}`);
  t.equal(right[165 * FRAME + 3], 0, 'the assistant side silent under the held frame');
  t.equal(right[49 * FRAME + 3], 0, 'assistant silent before it spoke');
  t.equal(right[50 * FRAME + 3], -5000 + 50, 'assistant frame on its tick');
  t.equal(right[99 * FRAME + 3], -5000 + 99);
  t.equal(right[100 * FRAME + 3], 0, 'silent after');
});

t.test(
  'wav.gz: finish() leaves the complete WAV at once, uncompressed; compressRecording gzips exactly its bytes',
  async (t) => {
    const dir = t.testdir({});
    const res = await record(join(dir, 'call.wav.gz'), 'wav.gz', 120);
    t.equal(res.path, join(dir, 'call.wav'), 'the WAV, not the gzip');
    t.equal(res.format, 'wav', 'stored as what is on disk');
    t.equal(res.wanted, 'wav.gz', 'the format asked for, for the compressor');
    t.notOk(existsSync(join(dir, 'call.wav.gz')), 'nothing compressed by finish()');
    const wavFile = readFileSync(res.path);
    t.equal(wavFile.length, res.bytes);
    t.equal(wavFile.length, 44 + 120 * FRAME * 4);
    const gzPath = join(dir, 'call.wav.gz');
    const gzBytes = await compressRecording(res.path, gzPath);
    const gz = readFileSync(gzPath);
    t.equal(gz.length, gzBytes);
    t.equal(statSync(gzPath).size, gzBytes);
    const wav = pako.ungzip(gz);
    t.ok(Buffer.from(wav).equals(wavFile), 'the gzip holds exactly the WAV');
    const { left, right } = channels(wav);
    t.equal(left.length, 120 * FRAME);
    t.equal(left[119 * FRAME], 1000 + 119);
    t.equal(right[60 * FRAME], -5000 + 60);
    t.ok(gz.length < wav.length / 5, `compressed (${gz.length} of ${wav.length})`);
    await t.rejects(compressRecording(res.path, gzPath), { code: 'EEXIST' }, 'an existing gzip is never overwritten');
    t.ok(readFileSync(gzPath).equals(gz), 'and is left as it was');
  },
);

t.test('a compression aborted half-way leaves no .gz behind', async (t) => {
  const dir = t.testdir({});
  const res = await record(join(dir, 'call.wav.gz'), 'wav.gz', 400); // 8 s: several 256 KB reads
  const gzPath = join(dir, 'call.wav.gz');
  const wavBefore = readFileSync(res.path);
  const abort = new AbortController();
  let chunks = 0;
  let reached!: () => void;
  const firstChunk = new Promise<void>((r) => (reached = r));
  // Passes the first chunk on, then holds every later one: the gzip is open and incomplete.
  const gate = () =>
    new Transform({
      transform(chunk, _enc, done) {
        if (chunks++ === 0) {
          done(null, chunk);
          reached();
        }
      },
    });
  const running = compressRecording(res.path, gzPath, { signal: abort.signal, through: gate });
  await firstChunk;
  await until(() => existsSync(gzPath), { what: 'the gzip file opened', timeoutMs: 5_000, intervalMs: 5 });
  abort.abort();
  await t.rejects(running, { name: 'AbortError' });
  t.notOk(existsSync(gzPath), 'the partial gzip removed');
  t.ok(readFileSync(res.path).equals(wavBefore), 'the WAV untouched');
});

t.test(
  'an existing recording is never overwritten; finishing twice is refused; audio beyond the backlog is dropped and reported, audio held at the end kept',
  async (t) => {
    const dir = t.testdir({});
    const path = join(dir, 'a.wav');
    const rec = await StereoRecorder.open(path, { sampleRate: RATE });
    await t.rejects(StereoRecorder.open(path, { sampleRate: RATE }), RecordingError);
    // 3 s of user audio with no tick: the 2 s backlog holds frames 0-99; frames 100-149 are dropped.
    for (let i = 0; i < 150; i++) rec.writeUser(frameOf(i, 0));
    // Each tick makes room for one more frame: the side stays at its backlog, nothing more dropped.
    for (let i = 0; i < 100; i++) {
      rec.tick();
      rec.writeUser(frameOf(150 + i, 0));
    }
    const res = await rec.finish();
    t.equal(res.droppedMs, 50 * FRAME_MS, 'the dropped second is reported');
    const { left, right } = channels(readFileSync(res.path));
    // 100 frames ticked, and the 100 still held when it finished: the timeline runs on to them.
    t.equal(left.length, 200 * FRAME);
    t.equal(res.durationMs, 200 * FRAME_MS);
    t.same(
      [0, 99, 100, 199].map((f) => left[f * FRAME]),
      [0, 99, 150, 249],
      'frames in order, the dropped ones left out',
    );
    t.ok(
      right.every((v) => v === 0),
      'the silent side is silence throughout',
    );
    await t.rejects(rec.finish(), RecordingError);
  },
);

t.test(
  'every sample on its channel and position: partial frames end in silence, blocks reused across seconds',
  async (t) => {
    const dir = t.testdir({});
    const rec = await StereoRecorder.open(join(dir, 'ramp.wav'), { sampleRate: RATE });
    const ticks = 260; // 5.2 s: blocks are recycled after their write
    const userAt = (tick: number, i: number) => ((tick * FRAME + i) % 65536) - 32768;
    const asstAt = (tick: number, i: number) => 32767 - ((tick * 7 + i * 3) % 65536);
    for (let k = 0; k < ticks; k++) {
      // The user side brings 100 samples on every fifth tick (the rest of that frame is silence).
      rec.writeUser(Int16Array.from({ length: k % 5 === 4 ? 100 : FRAME }, (_, i) => userAt(k, i)));
      if (k % 3 !== 0) rec.writeAssistant(Int16Array.from({ length: FRAME }, (_, i) => asstAt(k, i)));
      rec.tick();
      // Let the file writes complete now and then, so later seconds go into recycled blocks.
      if (k % 60 === 59) await new Promise((r) => setTimeout(r, 20));
    }
    const res = await rec.finish();
    const { left, right } = channels(readFileSync(res.path));
    t.equal(left.length, ticks * FRAME);
    let wrong = 0;
    for (let k = 0; k < ticks; k++) {
      for (let i = 0; i < FRAME; i++) {
        const l = k % 5 === 4 && i >= 100 ? 0 : userAt(k, i);
        const r = k % 3 === 0 ? 0 : asstAt(k, i);
        if (left[k * FRAME + i] !== l || right[k * FRAME + i] !== r) wrong++;
      }
    }
    t.equal(wrong, 0, 'no sample misplaced, missing or stale');
  },
);

t.test(
  'a side a little ahead of the clock: chunks across block boundaries land in order, and what is held at the end is kept',
  async (t) => {
    const dir = t.testdir({});
    const rec = await StereoRecorder.open(join(dir, 'ahead.wav'), { sampleRate: RATE });
    const CHUNK = 170; // 10 samples more than a frame per tick: chunks straddle the one-second blocks
    const ticks = 120;
    const at = (n: number) => (n % 65536) - 32768;
    for (let k = 0; k < ticks; k++) {
      rec.writeUser(Int16Array.from({ length: CHUNK }, (_, i) => at(k * CHUNK + i)));
      rec.tick();
    }
    const res = await rec.finish();
    t.equal(res.droppedMs, 0);
    const { left } = channels(readFileSync(res.path));
    const sent = ticks * CHUNK;
    t.equal(left.length, Math.ceil(sent / FRAME) * FRAME, 'the timeline ran on to the last sample held, whole frames');
    let wrong = 0;
    for (let n = 0; n < left.length; n++) if (left[n] !== (n < sent ? at(n) : 0)) wrong++;
    t.equal(wrong, 0, 'every sample in order, silence after the last');
  },
);
