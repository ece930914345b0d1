// Bleeping a recording: the tone replaces exactly the spans asked for, on the channel of the side that spoke (or
// both), leaves every other sample and the header as they were, and gives the same bytes in place, through the
// streaming transform (whatever the chunking) and between gunzip and gzip.
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { gunzipSync, gzipSync, createGunzip, createGzip } from 'node:zlib';
import t, { type Test } from 'tap';
import {
  BLEEP_FREQUENCY_HZ,
  BLEEP_LEVEL_DBFS,
  BleepError,
  bleepWavInPlace,
  parseWavHeader,
  WavBleepTransform,
} from '../../src/jobs/redaction/bleep.js';
import { writeWavHeader } from '../../src/jobs/external-storage/wav-multipart-sink.js';
import type { AudioSpan } from '../../src/jobs/redaction/timing.js';

const RATE = 16_000;
const SECONDS = 2;
const FRAMES = RATE * SECONDS;
const AMPLITUDE = Math.round(32767 * 10 ** (BLEEP_LEVEL_DBFS / 20));
const FADE_FRAMES = (5 * RATE) / 1000;

/** A WAV whose samples say where they are: left = frame % 7000 - 3500, right = -(frame % 5000). */
function wav(channels: 1 | 2): Buffer {
  const b = Buffer.alloc(44 + FRAMES * channels * 2);
  writeWavHeader(b, RATE, channels, FRAMES * channels * 2);
  for (let f = 0; f < FRAMES; f++) {
    b.writeInt16LE((f % 7000) - 3500, 44 + f * channels * 2);
    if (channels === 2) b.writeInt16LE(-(f % 5000), 44 + f * 4 + 2);
  }
  return b;
}

const sample = (b: Buffer, f: number, c: number, channels = 2) => b.readInt16LE(44 + (f * channels + c) * 2);
const tone = (f: number) => Math.round(AMPLITUDE * Math.sin((2 * Math.PI * BLEEP_FREQUENCY_HZ * f) / RATE));
const frame = (ms: number) => (ms * RATE) / 1000;

const spans: AudioSpan[] = [
  { side: 'user', startMs: 500, endMs: 1000 },
  { side: 'both', startMs: 1500, endMs: 1600 },
];

/** Checks `out` against `orig` bleeped with `spans` (stereo): tone inside, the original elsewhere. */
function checkBleeped(t: Test, orig: Buffer, out: Buffer): void {
  t.ok(out.subarray(0, 44).equals(orig.subarray(0, 44)), 'the header is unchanged');
  t.equal(out.length, orig.length);
  const inside = (f: number, c: number) =>
    (c === 0 && f >= frame(500) && f < frame(1000)) || (f >= frame(1500) && f < frame(1600));
  let wrong = 0;
  let toneSamples = 0;
  for (let f = 0; f < FRAMES; f++) {
    for (let c = 0; c < 2; c++) {
      if (!inside(f, c)) {
        if (sample(out, f, c) !== sample(orig, f, c)) wrong++;
        continue;
      }
      const fromEdge = Math.min(
        f - (c === 0 && f < frame(1000) ? frame(500) : frame(1500)),
        (c === 0 && f < frame(1000) ? frame(1000) : frame(1600)) - 1 - f,
      );
      if (fromEdge < FADE_FRAMES) continue; // the fade mixes tone and speech
      toneSamples++;
      if (sample(out, f, c) !== tone(f)) wrong++;
    }
  }
  t.equal(wrong, 0, 'every sample outside the spans unchanged, every one inside (past the fades) the tone');
  t.ok(toneSamples > frame(500), `${toneSamples} tone samples checked`);
  // The tone is 1 kHz: two zero crossings per millisecond.
  let crossings = 0;
  for (let f = frame(600); f < frame(900); f++)
    if (Math.sign(sample(out, f, 0)) !== Math.sign(sample(out, f + 1, 0)) && sample(out, f + 1, 0) !== 0) crossings++;
  t.ok(Math.abs(crossings - 600) <= 4, `${crossings} zero crossings in 300 ms`);
  t.equal(
    sample(out, frame(700), 1),
    sample(orig, frame(700), 1),
    "the assistant's channel keeps its audio while the user's is bleeped",
  );
}

t.test('in place, through the transform in odd chunks, and between gunzip and gzip: the same result', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-bleep-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const orig = wav(2);
  const path = join(dir, 'rec.wav');
  writeFileSync(path, orig);
  const r = await bleepWavInPlace(path, spans);
  t.match(r.layout, { sampleRate: RATE, channels: 2, dataOffset: 44, dataBytes: FRAMES * 4 });
  t.equal(r.framesBleeped, frame(500) + 2 * frame(100));
  const inPlace = readFileSync(path);
  checkBleeped(t, orig, inPlace);

  const chunks: Buffer[] = [];
  const pieces = [];
  for (let at = 0; at < orig.length; at += 1001) pieces.push(orig.subarray(at, at + 1001));
  const transform = new WavBleepTransform(spans);
  await pipeline(
    Readable.from(pieces),
    transform,
    new Writable({ write: (c: Buffer, _e, done) => void (chunks.push(c), done()) }),
  );
  t.ok(Buffer.concat(chunks).equals(inPlace), 'the transform, fed 1001-byte chunks, gives the same bytes');
  t.equal(transform.result?.framesBleeped, r.framesBleeped);

  const gz = join(dir, 'rec.wav.gz');
  const out = join(dir, 'out.wav.gz');
  writeFileSync(gz, gzipSync(orig));
  await pipeline(
    createReadStream(gz),
    createGunzip(),
    new WavBleepTransform(spans),
    createGzip(),
    createWriteStream(out),
  );
  t.ok(gunzipSync(readFileSync(out)).equals(inPlace), 'a .wav.gz bleeps the same');
});

t.test(
  'a mono recording is bleeped on its one channel whatever the side; spans past the end are clipped',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-bleep-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const orig = wav(1);
    const path = join(dir, 'mono.wav');
    writeFileSync(path, orig);
    const r = await bleepWavInPlace(path, [{ side: 'assistant', startMs: 1900, endMs: 5000 }]);
    t.equal(r.framesBleeped, frame(100));
    const out = readFileSync(path);
    t.equal(sample(out, frame(1950), 0, 1), tone(frame(1950)));
    t.equal(sample(out, frame(1850), 0, 1), sample(orig, frame(1850), 0, 1));
  },
);

t.test('only 16-bit PCM WAV is bleeped', async (t) => {
  const b = wav(2);
  b.writeUInt16LE(8, 34); // 8 bits per sample
  t.throws(() => parseWavHeader(b), BleepError);
  t.throws(() => parseWavHeader(Buffer.from('RIFF....AVI LIST')), BleepError);
  t.equal(parseWavHeader(wav(2).subarray(0, 30)), null, 'a header cut short needs more bytes');
});
