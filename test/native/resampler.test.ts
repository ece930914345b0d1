// The native polyphase resampler for every pair of the six pipeline rates: pass band ripple, stop band
// attenuation (images and aliases at least 70 dB down), round-trip SNR, and chunking independence (no
// discontinuity at frame boundaries).
import t from 'tap';
import { G711_MULAW, mulawEncodeInto } from '../../src/media/native/g711.js';
import {
  RESAMPLER_RATES,
  ResampleEncodeGroup,
  Resampler,
  resampleBatch,
  type ResamplerRate,
} from '../../src/media/native/resampler.js';

// 30 rate pairs, each measured with many tones: allow for a loaded CI machine.
t.setTimeout(300_000);

const AMPLITUDE = 16384; // -6 dBFS
const SECONDS = 0.5;
const PASS_EDGE = 0.42; // of the lower rate, as designed
const STOP_EDGE = 0.5;
const MAX_RIPPLE_DB = 0.1;
const MIN_STOPBAND_DB = 70;
const MIN_ROUND_TRIP_SNR_DB = 60;

function tone(rate: number, hz: number, seconds: number, amplitude = AMPLITUDE): Int16Array {
  const n = Math.round(rate * seconds);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate + 0.3));
  return out;
}

function resampleAll(from: ResamplerRate, to: ResamplerRate, input: Int16Array, chunks?: number[]): Int16Array {
  const r = new Resampler(from, to, Math.max(4096, ...(chunks ?? [])));
  const out = new Int16Array(r.maxOutput(input.length) + 16 * (chunks?.length ?? 1));
  let written = 0;
  let offset = 0;
  let c = 0;
  while (offset < input.length) {
    const size = Math.min(chunks ? chunks[c++ % chunks.length] : 4096, input.length - offset);
    const chunk = input.subarray(offset, offset + size);
    written += r.process(chunk, out.subarray(written, written + r.maxOutput(size)));
    offset += size;
  }
  r.destroy();
  return out.subarray(0, written);
}

// Least-squares fit of a*cos + b*sin at hz over y[skip..]: returns the tone power and the residual power.
function fitTone(y: Int16Array, rate: number, hz: number, skip: number): { tone: number; residual: number } {
  const w = (2 * Math.PI * hz) / rate;
  let cc = 0,
    ss = 0,
    cs = 0,
    yc = 0,
    ys = 0;
  for (let n = skip; n < y.length - skip; n++) {
    const c = Math.cos(w * n),
      s = Math.sin(w * n);
    cc += c * c;
    ss += s * s;
    cs += c * s;
    yc += y[n] * c;
    ys += y[n] * s;
  }
  const det = cc * ss - cs * cs;
  const a = (yc * ss - ys * cs) / det;
  const b = (ys * cc - yc * cs) / det;
  let residual = 0;
  let count = 0;
  for (let n = skip; n < y.length - skip; n++) {
    const e = y[n] - a * Math.cos(w * n) - b * Math.sin(w * n);
    residual += e * e;
    count++;
  }
  return { tone: (a * a + b * b) / 2, residual: residual / count };
}

function power(y: Int16Array, skip: number): number {
  let p = 0;
  for (let n = skip; n < y.length - skip; n++) p += y[n] * y[n];
  return p / (y.length - 2 * skip);
}

const db = (ratio: number) => 10 * Math.log10(ratio);
const pairs: [ResamplerRate, ResamplerRate][] = [];
for (const a of RESAMPLER_RATES) for (const b of RESAMPLER_RATES) if (a !== b) pairs.push([a, b]);

t.test('pass band: flat within 0.1 dB and everything else at least 70 dB down, for every rate pair', async (t) => {
  for (const [from, to] of pairs) {
    const lower = Math.min(from, to);
    const skip = Math.ceil((new Resampler(from, to, 1).delaySamples * 2 * to) / from) + 8;
    const gains: number[] = [];
    let worstSpur = -Infinity;
    for (let k = 0; k <= 10; k++) {
      const hz = 100 + ((PASS_EDGE * lower - 100) * k) / 10;
      const { tone: p, residual } = fitTone(resampleAll(from, to, tone(from, hz, SECONDS)), to, hz, skip);
      gains.push(db(p / ((AMPLITUDE * AMPLITUDE) / 2)));
      worstSpur = Math.max(worstSpur, db(residual / p));
    }
    const ripple = Math.max(...gains) - Math.min(...gains);
    t.ok(ripple <= MAX_RIPPLE_DB, `${from}->${to} ripple ${ripple.toFixed(4)} dB`);
    t.ok(Math.max(...gains.map(Math.abs)) <= MAX_RIPPLE_DB, `${from}->${to} unit gain`);
    t.ok(worstSpur <= -MIN_STOPBAND_DB, `${from}->${to} images/noise ${worstSpur.toFixed(1)} dB`);
  }
});

t.test('stop band: input above the output Nyquist frequency is attenuated at least 70 dB', async (t) => {
  for (const [from, to] of pairs) {
    if (to > from) continue;
    const skip = Math.ceil((new Resampler(from, to, 1).delaySamples * 2 * to) / from) + 8;
    let worst = -Infinity;
    for (let k = 0; k <= 8; k++) {
      const hz = STOP_EDGE * to + (0.5 * from - STOP_EDGE * to) * (0.02 + 0.96 * (k / 8));
      const out = resampleAll(from, to, tone(from, hz, SECONDS));
      worst = Math.max(worst, db(power(out, skip) / ((AMPLITUDE * AMPLITUDE) / 2)));
    }
    t.ok(worst <= -MIN_STOPBAND_DB, `${from}->${to} worst alias ${worst.toFixed(1)} dB`);
  }
});

t.test('round trip through every other rate keeps SNR above 60 dB', async (t) => {
  for (const base of [8000, 16000] as const) {
    for (const mid of RESAMPLER_RATES) {
      if (mid === base) continue;
      for (const hz of [300, 1000, 0.4 * Math.min(base, mid)]) {
        const there = resampleAll(base, mid, tone(base, hz, SECONDS));
        const back = resampleAll(mid, base, there);
        const skip = 4 * new Resampler(base, mid, 1).delaySamples + 4 * new Resampler(mid, base, 1).delaySamples;
        const { tone: p, residual } = fitTone(back, base, hz, skip);
        const snr = db(p / residual);
        t.ok(snr >= MIN_ROUND_TRIP_SNR_DB, `${base}->${mid}->${base} at ${hz} Hz: SNR ${snr.toFixed(1)} dB`);
      }
    }
  }
});

t.test('any chunking gives exactly the one-shot output (no discontinuity at frame boundaries)', async (t) => {
  const oddChunks = [1, 7, 160, 13, 441, 3, 999, 2, 882, 37];
  for (const [from, to] of pairs) {
    const input = tone(from, 0.3 * Math.min(from, to), 0.3);
    const oneShot = resampleAll(from, to, input, [input.length]);
    const chunked = resampleAll(from, to, input, oddChunks);
    t.same(chunked, oneShot, `${from}->${to}`);
  }
});

t.test('20 ms frames map to 20 ms frames at steady state', async (t) => {
  const frame: Record<ResamplerRate, number> = {
    8000: 160,
    16000: 320,
    22050: 441,
    24000: 480,
    44100: 882,
    48000: 960,
  };
  for (const [from, to] of pairs) {
    const r = new Resampler(from, to, frame[from]);
    const out = new Int16Array(r.maxOutput(frame[from]));
    let total = 0;
    for (let i = 0; i < 50; i++) total += r.process(new Int16Array(frame[from]), out);
    t.equal(total, 50 * frame[to], `${from}->${to}`);
    r.destroy();
  }
});

t.test('resampleBatch equals per-stream processing', async (t) => {
  const streams = [
    [24000, 8000],
    [16000, 8000],
    [48000, 8000],
    [8000, 16000],
  ] as const;
  const single = streams.map(([a, b]) => new Resampler(a, b, 960));
  const batched = streams.map(([a, b]) => new Resampler(a, b, 960));
  const outsA = single.map((r) => new Int16Array(r.maxOutput(960)));
  const outsB = batched.map((r) => new Int16Array(r.maxOutput(960)));
  const written = new Int32Array(streams.length);
  for (let f = 0; f < 10; f++) {
    const inputs = streams.map(([a], s) => tone(a, 440 + 100 * s, 0.02).map((v) => v + f));
    resampleBatch(batched, inputs, outsB, written);
    for (let s = 0; s < streams.length; s++) {
      const n = single[s].process(inputs[s], outsA[s]);
      t.equal(written[s], n);
      t.same(outsB[s].subarray(0, n), outsA[s].subarray(0, n));
    }
  }
  for (const r of [...single, ...batched]) r.destroy();
});

t.test(
  'ResampleEncodeGroup equals per-stream resample + encode, tick after tick; a destroyed member throws',
  async (t) => {
    const streams = [
      [16000, 8000],
      [24000, 8000],
      [48000, 8000],
      [16000, 8000],
    ] as const;
    const frameOf = (rate: number) => (rate * 20) / 1000;
    const single = streams.map(([a, b]) => new Resampler(a, b, frameOf(a)));
    const grouped = streams.map(([a, b]) => new Resampler(a, b, frameOf(a)));
    const inputs = streams.map(([a]) => new Int16Array(frameOf(a)));
    const outs = streams.map(() => new Uint8Array(160));
    const group = new ResampleEncodeGroup(G711_MULAW, grouped, inputs, outs);
    const pcm = new Int16Array(400);
    const expected = new Uint8Array(160);
    for (let f = 0; f < 10; f++) {
      streams.forEach(([a], s) => inputs[s].set(tone(a, 300 + 200 * s, 0.02, 8000 + 1000 * f)));
      group.run();
      for (let s = 0; s < streams.length; s++) {
        const n = single[s].process(inputs[s], pcm);
        mulawEncodeInto(pcm.subarray(0, n), expected);
        t.equal(group.written[s], n, `frame ${f} stream ${s}: bytes`);
        t.same(outs[s], expected.subarray(0, n), `frame ${f} stream ${s}: payload`);
      }
    }
    grouped[2].destroy();
    t.throws(() => group.run(), /destroyed/);
    group.destroy();
    t.throws(
      () => new ResampleEncodeGroup(G711_MULAW, [single[0]], [new Int16Array(321)], [new Uint8Array(160)]),
      RangeError,
      'input longer than maxFrame',
    );
    for (const r of [...single, grouped[0], grouped[1], grouped[3]]) r.destroy();
  },
);

t.test('sizes and rates are checked at the boundary; destroy is final', async (t) => {
  t.throws(() => new Resampler(8000, 11025 as ResamplerRate, 160), RangeError);
  const r = new Resampler(8000, 16000, 160);
  t.throws(() => r.process(new Int16Array(161), new Int16Array(1000)), RangeError);
  t.throws(() => r.process(new Int16Array(160), new Int16Array(r.maxOutput(160) - 1)), RangeError);
  r.destroy();
  t.throws(() => r.process(new Int16Array(160), new Int16Array(1000)), /after destroy/);
});
