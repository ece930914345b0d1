// Local text-to-speech for the offline engines (echo, scripted): espeak-ng run as a child process when it is
// installed, its WAV cached on disk (PARLEY_DATA_DIR/tts-cache, per text and voice) and in memory (per text,
// voice and rate), resampled to the session rate with the native Resampler. Without espeak-ng: a deterministic
// tone pattern, a tone per word, so the audio is as long as the text would be spoken, pitched by voice (another
// voice sounds different there too).
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RESAMPLER_RATES, Resampler, type ResamplerRate } from '../media/native/resampler.js';

const run = promisify(execFile);

/** One word of the tone fallback: tone then gap (about a speaking rate of 150 words a minute). */
export const TONE_WORD_MS = 300;
export const TONE_GAP_MS = 100;
const TONE_AMPLITUDE = 0.25 * 32767;
/** Tone frequencies a word picks from (by a hash of the word): audible and inside telephone band. */
const TONE_BASE_HZ = 440;
const TONE_STEPS = 8;
const TONE_STEP_HZ = 55;
/** Steps a voice shifts every tone of the fallback by (by a hash of the voice): tones stay under 1 kHz, in band. */
const TONE_VOICE_STEPS = 4;
/** Memory cache entries kept (least recently used dropped first). */
const MEMORY_CACHE_ENTRIES = 256;
/** Input samples per Resampler call. */
const RESAMPLE_CHUNK = 2048;
/** WAV (Microsoft RIFF): the `fmt ` chunk's format code of integer PCM. */
const WAVE_FORMAT_PCM = 1;

export class LocalTtsError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LocalTtsError';
  }
}

export interface LocalTtsOptions {
  /** Directory of the disk cache (`<PARLEY_DATA_DIR>/tts-cache`); null: memory only. */
  cacheDir: string | null;
  /** The espeak-ng executable (default `espeak-ng` on PATH); a missing one selects the tone fallback. */
  espeakBinary?: string;
}

export interface LocalTts {
  /** Mono PCM of `text` spoken with `voice` (an espeak-ng voice) at `rate`. Shared: callers must not modify it. */
  synthesize(text: string, voice: string, rate: ResamplerRate): Promise<Int16Array>;
  /** 'espeak' until espeak-ng turns out missing, then 'tones'. */
  readonly backend: 'espeak' | 'tones';
  /** espeak-ng runs so far (cache misses), for tests and metrics. */
  readonly synthesisRuns: number;
}

export function createLocalTts(options: LocalTtsOptions): LocalTts {
  const binary = options.espeakBinary ?? 'espeak-ng';
  const memory = new Map<string, Promise<Int16Array>>();
  let backend: 'espeak' | 'tones' = 'espeak';
  let runs = 0;

  async function espeakWav(text: string, voice: string): Promise<Buffer | null> {
    const key = createHash('sha256').update(`${voice}\0${text}`).digest('hex');
    const file = options.cacheDir ? join(options.cacheDir, `${key}.wav`) : null;
    if (file) {
      try {
        return await readFile(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    const dir = options.cacheDir ?? tmpdir();
    await mkdir(dir, { recursive: true });
    // Unique per run: worker threads of one process share its pid and the cache directory.
    const tmp = join(dir, `${key}.${randomUUID()}.tmp`);
    runs++;
    try {
      // `--` ends options, so a text starting with '-' is spoken, not parsed.
      await run(binary, ['-v', voice, '-w', tmp, '--', text]);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && (err as { path?: string }).path === binary) {
        backend = 'tones';
        return null;
      }
      throw new LocalTtsError(`espeak-ng failed for voice ${voice}: ${(err as Error).message}`, { cause: err });
    }
    const target = file ?? tmp;
    if (file) await rename(tmp, file);
    const wav = await readFile(target);
    if (!file) await rm(tmp, { force: true });
    return wav;
  }

  async function make(text: string, voice: string, rate: ResamplerRate): Promise<Int16Array> {
    if (backend === 'espeak') {
      const wav = await espeakWav(text, voice);
      if (wav) {
        const { sampleRate, pcm } = parseWav(wav);
        return resample(pcm, sampleRate, rate);
      }
    }
    return tonePattern(text, rate, voice);
  }

  return {
    get backend() {
      return backend;
    },
    get synthesisRuns() {
      return runs;
    },
    synthesize(text, voice, rate) {
      const key = `${rate}\0${voice}\0${text}`;
      const hit = memory.get(key);
      if (hit) {
        memory.delete(key);
        memory.set(key, hit);
        return hit;
      }
      const made = make(text, voice, rate);
      memory.set(key, made);
      made.catch(() => memory.delete(key));
      if (memory.size > MEMORY_CACHE_ENTRIES) memory.delete(memory.keys().next().value as string);
      return made;
    },
  };
}

/** Mono 16-bit PCM of a RIFF/WAVE file; espeak-ng writes these (22050 Hz). */
export function parseWav(wav: Buffer): { sampleRate: number; pcm: Int16Array } {
  if (wav.length < 12 || wav.toString('latin1', 0, 4) !== 'RIFF' || wav.toString('latin1', 8, 12) !== 'WAVE') {
    throw new LocalTtsError('not a RIFF/WAVE file');
  }
  let sampleRate = 0;
  for (let at = 12; at + 8 <= wav.length;) {
    const id = wav.toString('latin1', at, at + 4);
    const size = wav.readUInt32LE(at + 4);
    const body = at + 8;
    if (id === 'fmt ') {
      const format = wav.readUInt16LE(body);
      const channels = wav.readUInt16LE(body + 2);
      const bits = wav.readUInt16LE(body + 14);
      if (format !== WAVE_FORMAT_PCM || channels !== 1 || bits !== 16) {
        throw new LocalTtsError(`unsupported WAV: format ${format}, ${channels} channels, ${bits} bits`);
      }
      sampleRate = wav.readUInt32LE(body + 4);
    } else if (id === 'data') {
      if (sampleRate === 0) throw new LocalTtsError('WAV data before its fmt chunk');
      // A streamed WAV may carry a placeholder size: take what is there.
      const end = Math.min(wav.length, body + size);
      const samples = Math.floor((end - body) / 2);
      const pcm = new Int16Array(samples);
      for (let i = 0; i < samples; i++) pcm[i] = wav.readInt16LE(body + i * 2);
      return { sampleRate, pcm };
    }
    at = body + size + (size & 1); // RIFF chunks are padded to even sizes
  }
  throw new LocalTtsError('WAV without a data chunk');
}

/** Whole-buffer resampling with the native Resampler, the filter's tail flushed (edge helper: allocates). */
export function resample(pcm: Int16Array, fromHz: number, toHz: ResamplerRate): Int16Array {
  if (fromHz === toHz) return pcm;
  if (!(RESAMPLER_RATES as readonly number[]).includes(fromHz))
    throw new LocalTtsError(`cannot resample from ${fromHz} Hz`);
  const resampler = new Resampler(fromHz as ResamplerRate, toHz, RESAMPLE_CHUNK);
  try {
    const expected = Math.round((pcm.length * toHz) / fromHz);
    const out = new Int16Array(expected + resampler.maxOutput(RESAMPLE_CHUNK) * 2);
    const scratch = new Int16Array(resampler.maxOutput(RESAMPLE_CHUNK));
    const silence = new Int16Array(RESAMPLE_CHUNK);
    let written = 0;
    let produced = 0;
    // The output lags by delaySamples input samples: drop that much output and feed as much silence at the end.
    const skip = Math.round((resampler.delaySamples * toHz) / fromHz);
    const push = (input: Int16Array) => {
      const n = resampler.process(input, scratch);
      for (let i = 0; i < n; i++, produced++) {
        if (produced >= skip && written < expected) out[written++] = scratch[i];
      }
    };
    for (let at = 0; at < pcm.length; at += RESAMPLE_CHUNK)
      push(pcm.subarray(at, Math.min(pcm.length, at + RESAMPLE_CHUNK)));
    for (let tail = resampler.delaySamples + 1; tail > 0 && written < expected; tail -= RESAMPLE_CHUNK) {
      push(silence.subarray(0, Math.min(RESAMPLE_CHUNK, tail)));
    }
    return out.slice(0, written);
  } finally {
    resampler.destroy();
  }
}

/** Deterministic stand-in speech: per word a tone (its pitch from the word, shifted by the voice) and a gap. */
export function tonePattern(text: string, rate: number, voice = ''): Int16Array {
  const words = text.split(/\s+/).filter(Boolean);
  const voiceHz = (stringHash(voice) % TONE_VOICE_STEPS) * TONE_STEP_HZ;
  const toneSamples = Math.round((rate * TONE_WORD_MS) / 1000);
  const gapSamples = Math.round((rate * TONE_GAP_MS) / 1000);
  const out = new Int16Array(Math.max(1, words.length) * (toneSamples + gapSamples));
  words.forEach((word, w) => {
    const hz = TONE_BASE_HZ + voiceHz + (stringHash(word) % TONE_STEPS) * TONE_STEP_HZ;
    const start = w * (toneSamples + gapSamples);
    for (let i = 0; i < toneSamples; i++) {
      // A short linear fade at both ends so the tone does not click.
      const fade = Math.min(1, i / (rate / 200), (toneSamples - i) / (rate / 200));
      out[start + i] = Math.round(Math.sin((2 * Math.PI * hz * i) / rate) * TONE_AMPLITUDE * fade);
    }
  });
  return out;
}

/** Java's String.hashCode, unsigned: cheap and stable across runs. */
function stringHash(text: string): number {
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = (hash * 31 + text.charCodeAt(i)) >>> 0;
  return hash;
}
