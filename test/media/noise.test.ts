import t from 'tap';
import { NOISE_BEDS, NOISE_FULL_SCALE_RMS, NoiseMix, noiseBedLoop, renderNoiseBed } from '../../src/media/noise.js';

const RATE = 8000;
// Rendering beds is CPU work (a few hundred ms each); on a busy CI machine give it room.
t.setTimeout(180_000);

function rms(x: ArrayLike<number>, from = 0, to = x.length): number {
  let s = 0;
  for (let i = from; i < to; i++) s += x[i] * x[i];
  return Math.sqrt(s / (to - from));
}

t.test('beds are deterministic in their seed, distinct, at the nominal level and never silent', async (t) => {
  const rendered = new Map<string, Int16Array>();
  for (const bed of NOISE_BEDS) {
    const a = renderNoiseBed(bed, RATE, 7, 2);
    const b = renderNoiseBed(bed, RATE, 7, 2);
    const c = renderNoiseBed(bed, RATE, 8, 2);
    t.same(Buffer.from(a.buffer), Buffer.from(b.buffer), `${bed}: same seed, same samples`);
    t.notSame(Buffer.from(a.buffer), Buffer.from(c.buffer), `${bed}: another seed, another bed`);
    t.ok(
      Math.abs(rms(a) - NOISE_FULL_SCALE_RMS) < NOISE_FULL_SCALE_RMS * 0.01,
      `${bed}: RMS at full scale (${rms(a).toFixed(0)})`,
    );
    // Not silent anywhere: every 100 ms window carries sound.
    let quietest = Infinity;
    for (let i = 0; i + 800 <= a.length; i += 800) quietest = Math.min(quietest, rms(a, i, i + 800));
    t.ok(
      quietest > NOISE_FULL_SCALE_RMS * 0.05,
      `${bed}: no silent stretch (quietest 100 ms at ${quietest.toFixed(0)})`,
    );
    rendered.set(bed, a);
  }
  const [o, cc, cs] = NOISE_BEDS.map((b) => rendered.get(b)!);
  t.notSame(Buffer.from(o.buffer), Buffer.from(cc.buffer));
  t.notSame(Buffer.from(cc.buffer), Buffer.from(cs.buffer));
});

t.test('the murmur is speech-shaped: call-center babble puts more energy in the voice band than office', async (t) => {
  // Goertzel power at a few voice-band frequencies relative to total power.
  const bandShare = (x: Int16Array) => {
    let p = 0;
    for (const f of [300, 500, 700, 1000, 1400]) {
      const k = 2 * Math.cos((2 * Math.PI * f) / RATE);
      let s1 = 0,
        s2 = 0;
      for (let i = 0; i < x.length; i++) {
        const s0 = x[i] + k * s1 - s2;
        s2 = s1;
        s1 = s0;
      }
      p += s1 * s1 + s2 * s2 - k * s1 * s2;
    }
    return p / (rms(x) ** 2 * x.length * x.length);
  };
  const office = renderNoiseBed('office', RATE, 3, 3);
  const callCenter = renderNoiseBed('call-center', RATE, 3, 3);
  t.ok(bandShare(callCenter) > bandShare(office), 'more voice-band energy in the call center');
});

t.test('coffee-shop has clinks: sharp high-frequency transients', async (t) => {
  const x = renderNoiseBed('coffee-shop', 16000, 5, 6);
  // High-pass by first difference; clinks show as peaks far above the difference signal's RMS.
  const d = new Float32Array(x.length - 1);
  for (let i = 1; i < x.length; i++) d[i - 1] = x[i] - x[i - 1];
  const r = rms(d);
  let peaks = 0;
  for (let i = 0; i < d.length; i += 160) {
    let m = 0;
    for (let j = i; j < Math.min(i + 160, d.length); j++) m = Math.max(m, Math.abs(d[j]));
    if (m > 6 * r) peaks++;
  }
  t.ok(peaks >= 1, `transient peaks found (${peaks} 10 ms windows)`);
});

t.test('NoiseMix: scaled by background_noise_level, continuous across frames, no-op at 0', async (t) => {
  const loop = noiseBedLoop('office', RATE);
  const frame = new Int16Array(160);
  const collect = (level: number) => {
    const mix = new NoiseMix({ bed: 'office', sampleRate: RATE, level, startOffset: 1000 });
    const out = new Int16Array(160 * 250);
    for (let f = 0; f < 250; f++) {
      frame.fill(0);
      mix.process(frame, frame);
      out.set(frame, f * 160);
    }
    return out;
  };
  const full = collect(1);
  t.same(
    Array.from(full.subarray(0, 500)),
    Array.from(loop.subarray(1000, 1500)),
    'frames read the loop contiguously from the offset',
  );
  const half = collect(0.5);
  t.ok(
    Math.abs(rms(half) / rms(full) - 0.5) < 0.01,
    `level 0.5 halves the RMS (${(rms(half) / rms(full)).toFixed(3)})`,
  );
  const tenth = collect(0.1);
  t.ok(Math.abs(rms(tenth) / rms(full) - 0.1) < 0.01, 'level 0.1');
  t.equal(rms(collect(0)), 0, 'level 0 adds nothing');
  // Mixed under a signal, the signal stays (no replacement).
  const speech = new Int16Array(160).fill(1000);
  new NoiseMix({ bed: 'office', sampleRate: RATE, level: 0.2, startOffset: 0 }).process(speech, speech);
  let diff = 0;
  for (let i = 0; i < 160; i++) diff += speech[i] - 1000 - Math.round(loop[i] * 0.2);
  t.ok(Math.abs(diff) <= 160, 'signal + level x bed');
  t.throws(() => new NoiseMix({ bed: 'office', sampleRate: RATE, level: 1.5 }), RangeError);
});

t.test('loop seam is smooth (crossfaded)', async (t) => {
  const x = renderNoiseBed('office', RATE, 9, 3);
  const jump = Math.abs(x[0] - x[x.length - 1]);
  const d = new Float32Array(x.length - 1);
  for (let i = 1; i < x.length; i++) d[i - 1] = Math.abs(x[i] - x[i - 1]);
  const sorted = Array.from(d).sort((a, b) => a - b);
  t.ok(jump <= sorted[Math.floor(sorted.length * 0.999)], `seam step ${jump} within ordinary sample steps`);
});
