import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import t, { type Test } from 'tap';
import { TimeStretch } from '../../src/media/time-stretch.js';

const RATE = 16000;
const CHUNK = 320; // 20 ms

function tone(seconds: number, freqs: number[]): Int16Array {
  const n = Math.round(seconds * RATE);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    let v = 0;
    for (const f of freqs) v += Math.sin((2 * Math.PI * f * i) / RATE);
    out[i] = Math.round((8000 * v) / freqs.length);
  }
  return out;
}

/** Stretches input at one speed, fed in 20 ms chunks (stretchChunked, below). */
function stretch(input: Int16Array, speed: number): Int16Array {
  return stretchChunked(RATE, input, [CHUNK], () => speed);
}

/** Power at frequency f (Goertzel) over x, a signal at `rate` (default RATE). */
function power(x: Int16Array, f: number, rate = RATE): number {
  const k = 2 * Math.cos((2 * Math.PI * f) / rate);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < x.length; i++) {
    const s0 = x[i] + k * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return s1 * s1 + s2 * s2 - k * s1 * s2;
}

function dominant(x: Int16Array, from: number, to: number, step: number): number {
  let best = from;
  let bestP = -1;
  for (let f = from; f <= to; f += step) {
    const p = power(x, f);
    if (p > bestP) {
      bestP = p;
      best = f;
    }
  }
  return best;
}

for (const speed of [0.5, 0.8, 1.25, 1.5, 2.0]) {
  t.test(`speed ${speed}: length scales by 1/speed, pitch unchanged`, async (t) => {
    const input = tone(2, [200, 400, 600]);
    const out = stretch(input, speed);
    const expected = input.length / speed;
    const tolerance = 0.05 * RATE; // 50 ms: one window of lead-in/out
    t.ok(Math.abs(out.length - expected) < tolerance, `length ${out.length} vs ${expected.toFixed(0)}`);
    const mid = out.subarray(Math.floor(out.length * 0.2), Math.floor(out.length * 0.8));
    const f = dominant(mid, 150, 1000, 2);
    t.ok(
      [200, 400, 600].some((p) => Math.abs(f - p) <= 4),
      `dominant ${f} Hz is one of the input's partials`,
    );
    // A voiced-speech-like harmonic tone (f0 200 Hz): its partials stay, nothing appears between them.
    const on = power(mid, 200) + power(mid, 400) + power(mid, 600);
    const off = power(mid, 150) + power(mid, 300) + power(mid, 500) + power(mid, 700);
    t.ok(on > 100 * off, `partials stand 20 dB above the rest (ratio ${(on / off).toFixed(0)})`);
    // A resampling "speed-up" would move the 600 Hz partial to 600 x speed (never a partial here).
    t.ok(power(mid, 600) > 100 * power(mid, 600 * speed), 'no pitch shift');
  });
}

t.test('speed 1 passes audio through unchanged; out-of-range speeds are refused', async (t) => {
  const input = tone(0.2, [300]);
  const out = stretch(input, 1);
  t.same(Array.from(out.subarray(0, input.length)), Array.from(input));
  t.throws(() => new TimeStretch({ sampleRate: RATE, maxInput: CHUNK, speed: 2.5 }), RangeError);
  t.throws(() => new TimeStretch({ sampleRate: RATE, maxInput: CHUNK, speed: 0.4 }), RangeError);
});

t.test('reset forgets held audio', async (t) => {
  const ts = new TimeStretch({ sampleRate: RATE, maxInput: CHUNK, speed: 1.5 });
  const buf = new Int16Array(ts.maxOutput(CHUNK) + 1024);
  ts.process(tone(0.02, [300]), buf);
  ts.reset();
  t.equal(ts.flush(buf), 0, 'nothing held after reset');
});

/** Median pitch (Hz) of the voiced 40 ms frames of 8 kHz speech, by normalized autocorrelation. */
function medianPitch(x: Int16Array): number {
  const rate = 8000;
  const win = 320;
  const pitches: number[] = [];
  for (let s = 0; s + win + 120 <= x.length; s += 160) {
    let e = 0;
    for (let i = 0; i < win; i++) e += x[s + i] * x[s + i];
    if (e / win < 500 * 500) continue;
    let best = 0;
    let bestLag = 0;
    for (let lag = Math.floor(rate / 400); lag <= Math.floor(rate / 70); lag++) {
      let xy = 0;
      let yy = 0;
      for (let i = 0; i < win; i++) {
        xy += x[s + i] * x[s + i + lag];
        yy += x[s + i + lag] * x[s + i + lag];
      }
      const r = xy / Math.sqrt(e * yy + 1);
      if (r > best) {
        best = r;
        bestLag = lag;
      }
    }
    if (best > 0.6) pitches.push(rate / bestLag);
  }
  pitches.sort((a, b) => a - b);
  return pitches[Math.floor(pitches.length / 2)] ?? 0;
}

t.test("real speech: speed 0.8 and 1.2 keep the talker's pitch and scale the duration", async (t) => {
  const { loadPrompt } = await import('./speech.js');
  const speech = loadPrompt('vm-goodbye');
  const f0 = medianPitch(speech);
  t.ok(f0 > 120 && f0 < 300, `the prompt is voiced (median pitch ${f0.toFixed(0)} Hz)`);
  for (const speed of [0.8, 1.2]) {
    const ts = new TimeStretch({ sampleRate: 8000, maxInput: 160, speed });
    const chunks: Int16Array[] = [];
    const buf = new Int16Array(ts.maxOutput(160) + 1024);
    for (let i = 0; i < speech.length; i += 160) {
      const n = ts.process(speech.subarray(i, Math.min(i + 160, speech.length)), buf);
      chunks.push(buf.slice(0, n));
    }
    chunks.push(buf.slice(0, ts.flush(buf)));
    const out = new Int16Array(chunks.reduce((n, c) => n + c.length, 0));
    let o = 0;
    for (const c of chunks) {
      out.set(c, o);
      o += c.length;
    }
    t.ok(
      Math.abs(out.length - speech.length / speed) < 0.05 * 8000,
      `${speed}x: ${out.length} samples for ${(speech.length / speed).toFixed(0)}`,
    );
    const g = medianPitch(out);
    t.ok(Math.abs(g - f0) / f0 < 0.05, `${speed}x: pitch ${g.toFixed(0)} Hz vs ${f0.toFixed(0)} Hz`);
  }
});

t.test('a chunk given as the first `length` samples of a larger buffer stretches as that chunk alone', async (t) => {
  const input = tone(1, [220, 330]);
  const chunks = [640, 300, 17, 640, 1, 512];
  const viewed = new TimeStretch({ sampleRate: 16000, maxInput: 640, speed: 1.3 });
  const prefixed = new TimeStretch({ sampleRate: 16000, maxInput: 640, speed: 1.3 });
  const scratch = new Int16Array(640);
  const outA = new Int16Array(viewed.maxOutput(640) + 2048);
  const outB = new Int16Array(prefixed.maxOutput(640) + 2048);
  let offset = 0;
  for (let c = 0; offset < input.length; c++) {
    const k = Math.min(chunks[c % chunks.length], input.length - offset);
    scratch.fill(12345);
    scratch.set(input.subarray(offset, offset + k));
    const a = viewed.process(input.subarray(offset, offset + k), outA);
    const b = prefixed.process(scratch, outB, k);
    t.equal(b, a);
    t.same(outB.subarray(0, b), outA.subarray(0, a));
    offset += k;
  }
});

/** Stretches input fed in chunks of the given sizes (cycled); speedAt(offset) may change speed between chunks. */
function stretchChunked(
  rate: number,
  input: Int16Array,
  chunks: number[],
  speedAt: (offset: number) => number,
): Int16Array {
  const maxInput = Math.max(...chunks);
  const ts = new TimeStretch({ sampleRate: rate, maxInput, speed: speedAt(0) });
  const out = new Int16Array(input.length * 2 + rate);
  // Sized by maxOutput before each call, as callers must: the bound grows with the input held.
  let buf = new Int16Array(ts.maxOutput(maxInput));
  const room = (n: number) => {
    if (ts.maxOutput(n) > buf.length) buf = new Int16Array(ts.maxOutput(n));
    return buf;
  };
  let w = 0;
  for (let offset = 0, c = 0; offset < input.length; c++) {
    const k = Math.min(chunks[c % chunks.length], input.length - offset);
    const speed = speedAt(offset);
    if (speed !== ts.currentSpeed) ts.setSpeed(speed);
    const n = ts.process(input.subarray(offset, offset + k), room(k));
    out.set(buf.subarray(0, n), w);
    w += n;
    offset += k;
  }
  const n = ts.flush(room(0));
  out.set(buf.subarray(0, n), w);
  return out.subarray(0, w + n);
}

function sine(rate: number, seconds: number, f: number): Int16Array {
  const out = new Int16Array(Math.round(seconds * rate));
  for (let i = 0; i < out.length; i++) out[i] = Math.round(8000 * Math.sin((2 * Math.PI * f * i) / rate));
  return out;
}

/**
 * Smallest and largest peak of the periods of x[from, to). Overlap-adding segments of a sine that are out of phase
 * by phi dips its envelope to cos(phi / 2) between them (smooth windows hide the seam from a step check): a
 * flat envelope is what shows the segments were aligned.
 */
function periodPeaks(x: Int16Array, from: number, to: number, period: number): [number, number] {
  let lo = Infinity;
  let hi = 0;
  for (let s = from; s + period <= to; s += period) {
    let m = 0;
    for (let i = s; i < s + period; i++) m = Math.max(m, Math.abs(x[i]));
    lo = Math.min(lo, m);
    hi = Math.max(hi, m);
  }
  return [lo, hi];
}

/** The envelope of a stretched 8000-amplitude sine stays within 3% below and 1% above it (one window from each end). */
function flatEnvelope(t: Test, out: Int16Array, rate: number, f: number, what: string): void {
  const window = Math.round(rate * 0.025);
  const [lo, hi] = periodPeaks(out, window, out.length - 2 * window, Math.ceil(rate / f));
  t.ok(lo > 0.97 * 8000 && hi < 1.01 * 8000, `${what}: peaks per period ${lo}..${hi} of 8000`);
}

for (const rate of [8000, 24000]) {
  t.test(`${rate} Hz, speed 1.2: a 250 Hz tone keeps its pitch and a flat envelope`, async (t) => {
    const f = 250;
    const input = sine(rate, 1, f);
    const out = stretchChunked(rate, input, [rate / 50], () => 1.2);
    t.ok(
      Math.abs(out.length - input.length / 1.2) < 0.05 * rate,
      `length ${out.length} vs ${(input.length / 1.2).toFixed(0)}`,
    );
    const mid = out.subarray(Math.floor(out.length * 0.2), Math.floor(out.length * 0.8));
    const on = power(mid, f, rate);
    t.ok(on > 1000 * power(mid, f * 1.2, rate), 'no energy at 1.2 x the pitch (a resampling speed-up)');
    t.ok(
      on > 1000 * (power(mid, f - 40, rate) + power(mid, f + 40, rate)),
      'the tone stands 30 dB above its neighbourhood',
    );
    flatEnvelope(t, out, rate, f, 'segments aligned');
  });
}

t.test('any chunking of the input gives the same output (no seams at chunk boundaries)', async (t) => {
  const input = tone(1, [180, 360, 540]);
  const whole = stretchChunked(RATE, input, [320], () => 1.2);
  const ragged = stretchChunked(RATE, input, [1, 319, 17, 200, 64, 3], () => 1.2);
  t.equal(ragged.length, whole.length);
  t.same(ragged, whole, 'sample for sample');
});

t.test('speed changes mid-stream: each part scales by its own speed, pitch and continuity kept', async (t) => {
  const rate = 8000;
  const f = 200;
  const input = sine(rate, 2, f);
  const half = input.length / 2;
  for (const [a, b] of [
    [1.25, 0.8],
    [0.8, 2.0],
    [1.5, 1],
  ]) {
    const out = stretchChunked(rate, input, [160], (offset) => (offset < half ? a : b));
    const expected = half / a + half / b;
    t.ok(
      Math.abs(out.length - expected) < 0.05 * rate,
      `${a} -> ${b}: ${out.length} samples for ${expected.toFixed(0)}`,
    );
    flatEnvelope(t, out, rate, f, `${a} -> ${b}`);
    const window = Math.round(rate * 0.025);
    for (const part of [
      out.subarray(window, Math.floor(half / a) - window),
      out.subarray(Math.ceil(half / a) + window, out.length - 2 * window),
    ]) {
      t.ok(
        power(part, f, rate) > 1000 * power(part, f * 1.25, rate),
        `${a} -> ${b}: pitch kept on both sides of the change`,
      );
    }
  }
});

t.test('an output buffer shorter than the call writes is refused before anything is consumed', async (t) => {
  const input = tone(0.1, [300]);
  const ts = new TimeStretch({ sampleRate: RATE, maxInput: 800, speed: 0.5 });
  const small = new Int16Array(8);
  t.throws(() => ts.process(input.subarray(0, 800), small), RangeError);
  const ref = new TimeStretch({ sampleRate: RATE, maxInput: 800, speed: 0.5 });
  const a = new Int16Array(ts.maxOutput(800));
  const b = new Int16Array(ref.maxOutput(800));
  t.equal(
    ts.process(input.subarray(0, 800), a),
    ref.process(input.subarray(0, 800), b),
    'the refused call left no trace',
  );
  t.same(a, b);
  t.throws(() => ts.process(input, a), RangeError, 'a chunk over maxInput');
  t.throws(() => ts.setSpeed(2.01), RangeError);
  t.equal(ts.currentSpeed, 0.5);
  t.throws(() => ts.flush(small), RangeError, 'a flush with held audio into too short an out');
  t.ok(ts.flush(a) > 0, 'the refused flush left the held audio in place');
  t.equal(ts.flush(new Int16Array(0)), 0, 'nothing held: a flush needs no room');
});

/**
 * sha256 of the first `prompts` en_US_f_Allison prompts (by name) at `rate` (8 kHz upsampled by linear
 * interpolation), each stretched at `speed` as one utterance in 20 ms chunks.
 */
async function speechDigest(rate: number, speed: number, prompts: number): Promise<string> {
  const { SOUNDS_DIR, loadPrompt } = await import('./speech.js');
  const names = readdirSync(SOUNDS_DIR)
    .filter((f) => f.endsWith('.wav'))
    .sort()
    .slice(0, prompts);
  const up = rate / 8000;
  const hash = createHash('sha256');
  for (const name of names) {
    const x8 = loadPrompt(name.slice(0, -4));
    const x = new Int16Array(x8.length * up);
    for (let i = 0; i < x.length; i++) {
      const a = Math.floor(i / up);
      const f = i / up - a;
      x[i] = Math.round(x8[a] * (1 - f) + (a + 1 < x8.length ? x8[a + 1] : 0) * f);
    }
    hash.update(stretchChunked(rate, x, [rate / 50], () => speed));
  }
  return hash.digest('hex');
}

t.test('real speech: the segments chosen are those of the search as first written', async (t) => {
  // sha256 of the output of main at ad099e4, whose search scored each candidate as xy / sqrt(yy), one at a time. A
  // search that orders candidates the same way writes the same samples; a faster one may differ only where two
  // candidates' scores agree to rounding (~1e-15 relative), which none of these prompts has.
  t.equal(
    await speechDigest(8000, 1.2, 1000),
    '123d07fa9db3ed9a79b5d2a6fe209c8b57d2296c519071b69f3ab691f944886d',
    '8 kHz x1.2, every prompt (coarse grid: every 2nd sample)',
  );
  t.equal(
    await speechDigest(16000, 0.8, 40),
    '0bbc99ce572cc238c6a4bb0aa4096424c72662acf89efb2eaecef6fb2b6afca0',
    '16 kHz x0.8 (every 4th)',
  );
  t.equal(
    await speechDigest(48000, 1.5, 10),
    'f8f75191917a0af02a501e6bb7ca12b1353578736b56365fe214cccd932afb4a',
    '48 kHz x1.5 (every 12th)',
  );
});
