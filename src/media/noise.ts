// Background noise beds for `background_noise` (office, call-center, coffee-shop), synthesized by Parley itself
// from a seed: nothing recorded, nothing downloaded. Each bed is a loop rendered once per (bed, sample rate) and
// shared read-only by every stream of a worker; a stream reads it from its own offset and mixes it into the
// outbound audio at `background_noise_level` (0..1), so the per-frame cost is one mix.
//
// Ingredients:
// - room tone: pink noise (Paul Kellet's filter) and low rumble (leaky-integrated white noise), the steady bed;
// - murmur: formant-shaped babble, voices made of a glottal pulse train (jittered f0, slow intonation) through
//   three vowel formant resonators (Peterson & Barney 1952 averages) gliding between vowels at syllable rate,
//   with syllable and pause envelopes, summed and low-passed so no word can be made out;
// - transients: keyboard clicks (bursts of band-passed noise with a fast decay, typed in runs) and cup/spoon
//   clinks (inharmonic damped partials of a small ceramic body, 2-6 kHz).
import type { Stage } from './pipeline.js';

export const NOISE_BEDS = ['office', 'call-center', 'coffee-shop'] as const;
export type NoiseBed = (typeof NOISE_BEDS)[number];

/** Length of a rendered loop: long enough that the repetition is not noticed in a call. */
export const NOISE_LOOP_SEC = 12;
/** Loudness of a bed at background_noise_level 1: RMS -20 dBFS, clearly audible under speech at about -10. */
export const NOISE_FULL_SCALE_RMS = 32768 * 0.1;
/** Seconds of fade across the loop seam (crossfade of the loop's end into its start). */
const SEAM_SEC = 0.25;

/** A bed's recipe: each component's share of the bed's RMS (components are rendered apart, normalized, summed). */
interface Mix {
  room: number;
  rumble: number;
  murmur: number;
  voices: number;
  keyboard: number;
  keyboardRunsPerMinute: number;
  clinks: number;
  clinksPerMinute: number;
}

const BEDS: Readonly<Record<NoiseBed, Mix>> = {
  // A quiet open office: air conditioning, a few distant talkers, someone typing.
  office: {
    room: 0.4,
    rumble: 0.3,
    murmur: 0.45,
    voices: 4,
    keyboard: 0.2,
    keyboardRunsPerMinute: 10,
    clinks: 0,
    clinksPerMinute: 0,
  },
  // Many agents talking at once, typing between calls.
  'call-center': {
    room: 0.2,
    rumble: 0.15,
    murmur: 1,
    voices: 14,
    keyboard: 0.2,
    keyboardRunsPerMinute: 24,
    clinks: 0,
    clinksPerMinute: 0,
  },
  // A busy room of talkers, cups and spoons.
  'coffee-shop': {
    room: 0.3,
    rumble: 0.25,
    murmur: 0.8,
    voices: 10,
    keyboard: 0,
    keyboardRunsPerMinute: 0,
    clinks: 0.4,
    clinksPerMinute: 14,
  },
};

/** Vowel formants F1, F2, F3 in Hz (Peterson & Barney 1952, adult averages). */
const VOWELS: readonly (readonly [number, number, number])[] = [
  [730, 1090, 2440], // a
  [530, 1840, 2480], // e
  [270, 2290, 3010], // i
  [570, 840, 2410], // o
  [300, 870, 2240], // u
  [660, 1720, 2410], // ae
  [520, 1190, 2390], // schwa
];
const FORMANT_BANDWIDTHS = [90, 110, 170] as const;

/** mulberry32: a small, fast, seedable PRNG; the same seed renders the same bed on every machine. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Two-pole resonator (a formant or a band-pass), direct form, normalized to about unit peak gain. */
class Resonator {
  private y1 = 0;
  private y2 = 0;
  private a1 = 0;
  private a2 = 0;
  private g = 0;
  constructor(private readonly rate: number) {}
  tune(freq: number, bandwidth: number): void {
    const r = Math.exp((-Math.PI * bandwidth) / this.rate);
    this.a1 = 2 * r * Math.cos((2 * Math.PI * freq) / this.rate);
    this.a2 = -r * r;
    this.g = 1 - r;
  }
  step(x: number): number {
    const y = this.g * x + this.a1 * this.y1 + this.a2 * this.y2;
    this.y2 = this.y1;
    this.y1 = y;
    return y;
  }
}

function addRoomTone(out: Float32Array, rnd: () => number, pinkGain: number, rumbleGain: number): void {
  let b0 = 0,
    b1 = 0,
    b2 = 0,
    b3 = 0,
    b4 = 0,
    b5 = 0,
    b6 = 0;
  let brown = 0;
  for (let i = 0; i < out.length; i++) {
    const w = rnd() * 2 - 1;
    // Paul Kellet's refined pink noise filter (-3 dB/octave within 0.05 dB above 9 Hz at 44.1 kHz).
    b0 = 0.99886 * b0 + w * 0.0555179;
    b1 = 0.99332 * b1 + w * 0.0750759;
    b2 = 0.969 * b2 + w * 0.153852;
    b3 = 0.8665 * b3 + w * 0.3104856;
    b4 = 0.55 * b4 + w * 0.5329522;
    b5 = -0.7616 * b5 - w * 0.016898;
    const pink = (b0 + b1 + b2 + b3 + b4 + b5 + b6 + w * 0.5362) * 0.11;
    b6 = w * 0.115926;
    brown = 0.995 * brown + w * 0.05;
    out[i] += pinkGain * pink + rumbleGain * brown * 3;
  }
}

function addMurmur(out: Float32Array, rate: number, rnd: () => number, voices: number, gain: number): void {
  const voice = new Float32Array(out.length);
  const formants = [new Resonator(rate), new Resonator(rate), new Resonator(rate)];
  for (let v = 0; v < voices; v++) {
    voice.fill(0);
    const baseF0 = rnd() < 0.5 ? 95 + rnd() * 40 : 170 + rnd() * 60; // lower and higher voices
    const level = 0.4 + rnd() * 0.6; // nearer and farther talkers
    let phase = rnd();
    let vowelFrom = VOWELS[Math.floor(rnd() * VOWELS.length)];
    let vowelTo = VOWELS[Math.floor(rnd() * VOWELS.length)];
    let syllableLen = Math.floor(rate * (0.12 + rnd() * 0.15));
    let syllablePos = 0;
    let talking = rnd() < 0.7;
    let stretchLeft = Math.floor(rate * (talking ? 1 + rnd() * 3 : 0.3 + rnd() * 1.5));
    for (const r of formants) r.tune(500, 100);
    let f0 = baseF0;
    let envelope = 0;
    for (let i = 0; i < out.length; i++) {
      if (--stretchLeft <= 0) {
        talking = !talking;
        stretchLeft = Math.floor(rate * (talking ? 1 + rnd() * 3 : 0.3 + rnd() * 1.5));
      }
      if (++syllablePos >= syllableLen) {
        syllablePos = 0;
        syllableLen = Math.floor(rate * (0.12 + rnd() * 0.15));
        vowelFrom = vowelTo;
        vowelTo = VOWELS[Math.floor(rnd() * VOWELS.length)];
      }
      const s = syllablePos / syllableLen;
      if ((i & 63) === 0) {
        for (let k = 0; k < 3; k++)
          formants[k].tune(vowelFrom[k] + (vowelTo[k] - vowelFrom[k]) * s, FORMANT_BANDWIDTHS[k]);
        // Intonation: a slow contour falling through each stretch of talk, with jitter.
        f0 =
          baseF0 *
          (1 + 0.08 * Math.sin((2 * Math.PI * i) / (rate * 1.7) + v) - 0.05 * (stretchLeft / rate / 4)) *
          (1 + (rnd() - 0.5) * 0.02);
      }
      phase += f0 / rate;
      let excitation = 0;
      if (phase >= 1) {
        phase -= 1;
        excitation = 1;
      }
      excitation += (rnd() - 0.5) * 0.05; // breath
      if ((i & 15) === 0) envelope = talking ? Math.sin(Math.PI * s) ** 0.6 : 0;
      const y = formants[0].step(excitation) + 0.6 * formants[1].step(excitation) + 0.3 * formants[2].step(excitation);
      voice[i] = y * envelope * level;
    }
    for (let i = 0; i < out.length; i++) out[i] += voice[i] * gain;
  }
  // Distance: a one-pole low-pass at ~1.8 kHz, half mixed in, takes the edges off the babble.
  const a = Math.exp((-2 * Math.PI * 1800) / rate);
  let y = 0;
  for (let i = 0; i < out.length; i++) {
    y = (1 - a) * out[i] + a * y;
    out[i] = 0.5 * out[i] + 0.5 * y;
  }
}

function addKeyboard(out: Float32Array, rate: number, rnd: () => number, runsPerMinute: number, gain: number): void {
  if (runsPerMinute <= 0) return;
  const band = new Resonator(rate);
  const seconds = out.length / rate;
  const runs = Math.round((runsPerMinute * seconds) / 60);
  for (let r = 0; r < runs; r++) {
    let t = Math.floor(rnd() * out.length);
    const keys = 5 + Math.floor(rnd() * 25);
    for (let k = 0; k < keys && t < out.length; k++) {
      band.tune(Math.min(rate * 0.4, 2500 + rnd() * 2500), 1500);
      const amp = gain * (0.5 + rnd() * 0.5);
      const len = Math.floor(rate * 0.012);
      for (let i = 0; i < len && t + i < out.length; i++) {
        out[t + i] += band.step((rnd() * 2 - 1) * Math.exp((-i / len) * 6)) * amp * 4;
      }
      t += Math.floor(rate * (0.08 + rnd() * 0.17)); // 4-12 keys per second
    }
  }
}

function addClinks(out: Float32Array, rate: number, rnd: () => number, perMinute: number, gain: number): void {
  if (perMinute <= 0) return;
  const seconds = out.length / rate;
  const count = Math.round((perMinute * seconds) / 60);
  const nyquistGuard = rate * 0.45;
  for (let c = 0; c < count; c++) {
    const t0 = Math.floor(rnd() * out.length);
    const base = 2000 + rnd() * 1500;
    // Inharmonic partials of a small ceramic body (ratios of a free plate's modes).
    const ratios = [1, 1.59, 2.14, 2.65];
    const amp = gain * (0.3 + rnd() * 0.7);
    const decay = 0.06 + rnd() * 0.1;
    const len = Math.floor(rate * decay * 4);
    for (const ratio of ratios) {
      const f = base * ratio;
      if (f > nyquistGuard) continue;
      const w = (2 * Math.PI * f) / rate;
      const partialAmp = amp / ratio;
      for (let i = 0; i < len && t0 + i < out.length; i++) {
        out[t0 + i] += partialAmp * Math.sin(w * i) * Math.exp(-i / (rate * decay));
      }
    }
  }
}

/** Renders one loop of a bed at `sampleRate`, normalized to NOISE_FULL_SCALE_RMS. Deterministic in `seed`. */
export function renderNoiseBed(bed: NoiseBed, sampleRate: number, seed = 1, seconds = NOISE_LOOP_SEC): Int16Array {
  const mix = BEDS[bed];
  if (!mix) throw new RangeError(`unknown background noise ${String(bed)}`);
  const rnd = seededRandom(seed ^ (NOISE_BEDS.indexOf(bed) * 0x9e3779b1));
  const seam = Math.floor(sampleRate * SEAM_SEC);
  const n = Math.floor(sampleRate * seconds);
  const acc = new Float32Array(n + seam);
  const part = new Float32Array(n + seam);
  const add = (share: number, render: (into: Float32Array) => void) => {
    if (share <= 0) return;
    part.fill(0);
    render(part);
    const r = rmsOf(part);
    if (r === 0) return;
    for (let i = 0; i < acc.length; i++) acc[i] += (part[i] * share) / r;
  };
  add(mix.room, (p) => addRoomTone(p, rnd, 1, 0));
  add(mix.rumble, (p) => addRoomTone(p, rnd, 0, 1));
  add(mix.murmur, (p) => addMurmur(p, sampleRate, rnd, mix.voices, 1));
  add(mix.keyboard, (p) => addKeyboard(p, sampleRate, rnd, mix.keyboardRunsPerMinute, 1));
  add(mix.clinks, (p) => addClinks(p, sampleRate, rnd, mix.clinksPerMinute, 1));
  // Seamless loop: crossfade the extra tail into the start.
  for (let i = 0; i < seam; i++) {
    const g = i / seam;
    acc[i] = acc[i] * g + acc[n + i] * (1 - g);
  }
  const rms = rmsOf(acc.subarray(0, n)) || 1;
  const scale = NOISE_FULL_SCALE_RMS / rms;
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    const v = Math.round(acc[i] * scale);
    out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
  }
  return out;
}

function rmsOf(x: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += x[i] * x[i];
  return Math.sqrt(sum / x.length);
}

const cache = new Map<string, Int16Array>();

/**
 * The shared loop of a bed at a rate, rendered on first use (many frames' worth of CPU) and kept for the worker's
 * life. A worker should call prewarmNoiseBeds at start so no call's first frame pays for it.
 */
export function noiseBedLoop(bed: NoiseBed, sampleRate: number): Int16Array {
  const key = `${bed}/${sampleRate}`;
  let loop = cache.get(key);
  if (!loop) {
    loop = renderNoiseBed(bed, sampleRate);
    cache.set(key, loop);
  }
  return loop;
}

/** Renders every bed at the given rates ahead of use (worker start-up). */
export function prewarmNoiseBeds(sampleRates: readonly number[]): void {
  for (const rate of sampleRates) for (const bed of NOISE_BEDS) noiseBedLoop(bed, rate);
}

export interface NoiseMixOptions {
  bed: NoiseBed;
  sampleRate: number;
  /** background_noise_level, 0..1. */
  level: number;
  /** Where in the loop this stream starts (so calls do not all hear the same moment); default random. */
  startOffset?: number;
}

/**
 * Mixes a bed into frames in place (input and output are the same buffer, so process() returns the input
 * length after adding the noise into `out`, which must be the input or a same-length copy of it).
 * At level 0 it is a no-op.
 */
export class NoiseMix implements Stage {
  private readonly loop: Int16Array;
  private pos: number;
  private level: number;

  constructor(opts: NoiseMixOptions) {
    this.loop = noiseBedLoop(opts.bed, opts.sampleRate);
    this.pos = Math.floor(opts.startOffset ?? Math.random() * this.loop.length) % this.loop.length;
    this.level = 0;
    this.setLevel(opts.level);
  }

  setLevel(level: number): void {
    if (!(level >= 0 && level <= 1)) throw new RangeError(`background_noise_level ${level} outside 0..1`);
    this.level = level;
  }

  process(input: Int16Array, out: Int16Array): number {
    const n = input.length;
    if (out !== input) out.set(input, 0);
    if (this.level === 0) return n;
    const loop = this.loop;
    const len = loop.length;
    const g = this.level;
    let p = this.pos;
    for (let i = 0; i < n; i++) {
      const v = out[i] + loop[p] * g;
      out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
      p = p + 1 === len ? 0 : p + 1;
    }
    this.pos = p;
    return n;
  }

  flush(): number {
    return 0;
  }

  reset(): void {}
}
