import t from 'tap';
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

function stretch(input: Int16Array, speed: number): Int16Array {
  const ts = new TimeStretch({ sampleRate: RATE, maxInput: CHUNK, speed });
  const out = new Int16Array(Math.ceil(input.length / speed) + 10 * RATE);
  const buf = new Int16Array(ts.maxOutput(CHUNK) + 4096);
  let w = 0;
  for (let i = 0; i < input.length; i += CHUNK) {
    const n = ts.process(input.subarray(i, Math.min(i + CHUNK, input.length)), buf);
    out.set(buf.subarray(0, n), w);
    w += n;
  }
  const n = ts.flush(buf);
  out.set(buf.subarray(0, n), w);
  return out.subarray(0, w + n);
}

/** Power at frequency f (Goertzel) over x. */
function power(x: Int16Array, f: number): number {
  const k = 2 * Math.cos((2 * Math.PI * f) / RATE);
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
    t.ok([200, 400, 600].some((p) => Math.abs(f - p) <= 4), `dominant ${f} Hz is one of the input's partials`);
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
