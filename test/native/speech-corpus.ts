// Real recorded speech for the native DSP tests: Debian's asterisk-core-sounds-en-wav prompts (8 kHz mono
// 16-bit), padded with silence, with the truth of where speech lies and seeded white noise at a given SNR.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { seededRandom } from '../../src/media/noise.js';
import { SOUNDS_DIR } from '../helpers/debian-packages.js';

export const PROMPTS_DIR = SOUNDS_DIR;
export const PROMPT_RATE = 8000;
export const PROMPT_COUNT = 568;

/** Every prompt's path relative to PROMPTS_DIR, sorted; throws (failing the test loudly) if the package is missing. */
export function listPrompts(): string[] {
  if (!existsSync(PROMPTS_DIR)) {
    throw new Error(`${PROMPTS_DIR} missing: apt-get install -y asterisk-core-sounds-en-wav`);
  }
  return readdirSync(PROMPTS_DIR, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.wav'))
    .sort();
}

/** The PCM16 samples of a prompt (RIFF chunks walked; the format must be 8 kHz mono 16-bit). */
export function loadPrompt(name: string): Int16Array {
  const b = readFileSync(join(PROMPTS_DIR, name));
  let off = 12;
  let format = false;
  while (off + 8 <= b.length) {
    const id = b.toString('ascii', off, off + 4);
    const size = b.readUInt32LE(off + 4);
    if (id === 'fmt ') {
      const channels = b.readUInt16LE(off + 10);
      const rate = b.readUInt32LE(off + 12);
      const bits = b.readUInt16LE(off + 22);
      if (channels !== 1 || rate !== PROMPT_RATE || bits !== 16) throw new Error(`${name}: not 8 kHz mono 16-bit`);
      format = true;
    } else if (id === 'data' && format) {
      const copy = new Int16Array(size >> 1);
      for (let i = 0; i < copy.length; i++) copy[i] = b.readInt16LE(off + 8 + 2 * i);
      return copy;
    }
    off += 8 + size + (size & 1);
  }
  throw new Error(`${name}: no data chunk`);
}

/** The prompt with padSamples of digital silence before and after. */
/** Prompts that are not speech: Asterisk's silences and its beep and conference tones. */
export function isSpeechPrompt(name: string): boolean {
  return !name.startsWith('silence/') && !TONE_PROMPTS.has(name);
}

export const TONE_PROMPTS = new Set([
  'beep.wav',
  'ascending-2tone.wav',
  'descending-2tone.wav',
  'confbridge-join.wav',
  'confbridge-leave.wav',
]);

export function pad(prompt: Int16Array, padSamples: number): Int16Array {
  const out = new Int16Array(prompt.length + 2 * padSamples);
  out.set(prompt, padSamples);
  return out;
}

export const ENVELOPE_STEP = 80; // 10 ms at 8 kHz
/** The truth threshold: 30 dB below the prompt's loudest 10 ms (power of the RMS envelope). */
export const TRUTH_THRESHOLD_DB = -30;

export interface SpeechTruth {
  /** first sample of the first 10 ms step above the threshold */
  start: number;
  /** sample just after the last 10 ms step above the threshold */
  end: number;
  /** active speech level: mean power of the 10 ms steps within 40 dB of the loudest */
  power: number;
}

/** Where speech lies in a prompt by its own 10 ms RMS envelope (prompts carry their own lead-in silence). */
export function truthOf(prompt: Int16Array, thresholdDb = TRUTH_THRESHOLD_DB): SpeechTruth {
  const steps = Math.floor(prompt.length / ENVELOPE_STEP);
  const env = new Float64Array(steps);
  let peak = 0;
  for (let s = 0; s < steps; s++) {
    let p = 0;
    for (let i = s * ENVELOPE_STEP; i < (s + 1) * ENVELOPE_STEP; i++) p += prompt[i] * prompt[i];
    env[s] = p / ENVELOPE_STEP;
    peak = Math.max(peak, env[s]);
  }
  // Active speech level: the mean power of the steps within 40 dB of the peak.
  let active = 0;
  let count = 0;
  for (let s = 0; s < steps; s++) {
    if (env[s] > peak * 1e-4) {
      active += env[s];
      count++;
    }
  }
  const power = count > 0 ? active / count : 0;
  const threshold = peak * 10 ** (thresholdDb / 10);
  let first = -1;
  let last = -1;
  for (let s = 0; s < steps; s++) {
    if (env[s] > threshold) {
      if (first < 0) first = s;
      last = s;
    }
  }
  return { start: first * ENVELOPE_STEP, end: (last + 1) * ENVELOPE_STEP, power };
}

/** Adds Gaussian white noise (Box-Muller over the seeded PRNG of src/media/noise.ts) of power speechPower / 10^(snrDb / 10). */
export function addWhiteNoise(signal: Int16Array, speechPower: number, snrDb: number, seed: number): Int16Array {
  const rand = seededRandom(seed);
  const sigma = Math.sqrt(speechPower / 10 ** (snrDb / 10));
  const out = new Int16Array(signal.length);
  for (let i = 0; i < signal.length; i++) {
    const g = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
    out[i] = Math.max(-32768, Math.min(32767, Math.round(signal[i] + sigma * g)));
  }
  return out;
}
