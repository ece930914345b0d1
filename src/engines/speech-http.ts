// Clients of the OpenAI-compatible speech HTTP APIs the cascade engine and the post-call transcript use:
// `POST {base}/audio/transcriptions` (multipart WAV -> text, or text with word timestamps) and
// `POST {base}/audio/speech` (text -> PCM, response_format pcm or wav). whisper.cpp, vLLM, Kokoro/Piper servers and
// hosted services all offer these.
import { z } from 'zod';
import { parseWav, resample } from './local-tts.js';
import type { ResamplerRate } from '../media/native/resampler.js';

/** The `pcm` response format of /audio/speech: raw 16-bit mono little-endian at 24 kHz. */
export const SPEECH_PCM_RATE: ResamplerRate = 24_000;
const ERROR_BODY_EXCERPT = 300;

export class SpeechHttpError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SpeechHttpError';
  }
}

export interface SpeechEndpoint {
  /** Base URL ending in /v1 (the API paths are appended). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  timeoutMs: number;
  /** The HTTP client (default: the global fetch); the post-call transcript passes its job's (JobContext.fetch). */
  fetch?: typeof fetch;
}

function url(endpoint: SpeechEndpoint, path: string): string {
  return `${endpoint.baseUrl.replace(/\/+$/, '')}${path}`;
}

function auth(endpoint: SpeechEndpoint): Record<string, string> {
  return endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {};
}

async function post(
  endpoint: SpeechEndpoint,
  path: string,
  init: { headers?: Record<string, string>; body: string | FormData },
  signal?: AbortSignal,
): Promise<Response> {
  const timeout = AbortSignal.timeout(endpoint.timeoutMs);
  let response: Response;
  try {
    response = await (endpoint.fetch ?? fetch)(url(endpoint, path), {
      method: 'POST',
      headers: { ...auth(endpoint), ...init.headers },
      body: init.body,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    const why = timeout.aborted
      ? `no answer within ${endpoint.timeoutMs} ms`
      : `unreachable: ${(err as Error).message}`;
    throw new SpeechHttpError(`${path}: ${why}`, { cause: err });
  }
  if (!response.ok) {
    const text = await response.text().catch((err: Error) => `(body unreadable: ${err.message})`);
    throw new SpeechHttpError(`${path}: HTTP ${response.status}: ${text.slice(0, ERROR_BODY_EXCERPT)}`);
  }
  return response;
}

/** A RIFF/WAVE file of mono 16-bit PCM (edge helper: allocates). */
export function wavFile(pcm: Int16Array, rate: number): Buffer {
  const data = pcm.length * 2;
  const out = Buffer.alloc(44 + data);
  out.write('RIFF', 0, 'latin1');
  out.writeUInt32LE(36 + data, 4);
  out.write('WAVEfmt ', 8, 'latin1');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // mono
  out.writeUInt32LE(rate, 24);
  out.writeUInt32LE(rate * 2, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36, 'latin1');
  out.writeUInt32LE(data, 40);
  for (let i = 0; i < pcm.length; i++) out.writeInt16LE(pcm[i], 44 + i * 2);
  return out;
}

/** Transcribes one user turn; resolves to its text ('' for silence). */
export async function transcribe(
  endpoint: SpeechEndpoint,
  pcm: Int16Array,
  rate: number,
  opts: { language?: string; prompt?: string; signal?: AbortSignal },
): Promise<string> {
  const form = new FormData();
  form.set('file', new Blob([wavFile(pcm, rate)], { type: 'audio/wav' }), 'turn.wav');
  form.set('model', endpoint.model);
  form.set('response_format', 'json');
  if (opts.language) form.set('language', opts.language);
  if (opts.prompt) form.set('prompt', opts.prompt);
  const response = await post(endpoint, '/audio/transcriptions', { body: form }, opts.signal);
  const body = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (err) {
    throw new SpeechHttpError(`/audio/transcriptions: answer is not JSON: ${body.slice(0, ERROR_BODY_EXCERPT)}`, {
      cause: err,
    });
  }
  const text = (json as { text?: unknown }).text;
  if (typeof text !== 'string') throw new SpeechHttpError('/audio/transcriptions: answer has no text');
  return text.trim();
}

/** A word of a transcription: its times in seconds from the start of the audio sent. */
export interface TimedWord {
  word: string;
  start: number;
  end: number;
}

const verboseTranscription = z.object({
  text: z.string(),
  words: z.array(z.object({ word: z.string(), start: z.number(), end: z.number() })).nullish(),
  segments: z.array(z.object({ start: z.number(), end: z.number(), text: z.string() })).nullish(),
});

/** `text`'s words spread evenly over [start, end) seconds. */
function spread(text: string, start: number, end: number): TimedWord[] {
  const words = text.split(/\s+/).filter(Boolean);
  const step = words.length > 0 ? Math.max(0, end - start) / words.length : 0;
  return words.map((word, i) => ({ word, start: start + i * step, end: start + (i + 1) * step }));
}

/**
 * Reads a `verbose_json` transcription (OpenAI's shape: `text`, `words` [{word, start, end}], `segments`). Without
 * `words` (a server that ignores `timestamp_granularities[]`), each segment's words are spread evenly over its
 * time; without segments either, the text's words over the whole audio (`durationSec`).
 */
export function parseVerboseTranscription(json: unknown, durationSec: number): { text: string; words: TimedWord[] } {
  const parsed = verboseTranscription.safeParse(json);
  if (!parsed.success)
    throw new SpeechHttpError(
      `/audio/transcriptions: not a verbose_json answer: ${parsed.error.issues[0]?.message ?? ''}`,
    );
  const { text, words, segments } = parsed.data;
  if (words && words.length > 0)
    return {
      text: text.trim(),
      words: words.map((w) => ({ word: w.word.trim(), start: w.start, end: w.end })).filter((w) => w.word),
    };
  if (segments && segments.length > 0)
    return { text: text.trim(), words: segments.flatMap((seg) => spread(seg.text, seg.start, seg.end)) };
  return { text: text.trim(), words: spread(text, 0, durationSec) };
}

/**
 * Transcribes audio with word timestamps (`response_format=verbose_json`, `timestamp_granularities[]=word`);
 * resolves to the text and its words (none for silence).
 */
export async function transcribeWords(
  endpoint: SpeechEndpoint,
  pcm: Int16Array,
  rate: number,
  opts: { language?: string; prompt?: string; signal?: AbortSignal },
): Promise<{ text: string; words: TimedWord[] }> {
  const form = new FormData();
  form.set('file', new Blob([wavFile(pcm, rate)], { type: 'audio/wav' }), 'audio.wav');
  form.set('model', endpoint.model);
  form.set('response_format', 'verbose_json');
  form.append('timestamp_granularities[]', 'word');
  if (opts.language) form.set('language', opts.language);
  if (opts.prompt) form.set('prompt', opts.prompt);
  const response = await post(endpoint, '/audio/transcriptions', { body: form }, opts.signal);
  const body = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (err) {
    throw new SpeechHttpError(`/audio/transcriptions: answer is not JSON: ${body.slice(0, ERROR_BODY_EXCERPT)}`, {
      cause: err,
    });
  }
  return parseVerboseTranscription(json, pcm.length / rate);
}

/** Speaks `text` with `voice`; resolves to PCM at `rate` (a WAV answer is read by its header, raw PCM is 24 kHz). */
export async function synthesize(
  endpoint: SpeechEndpoint,
  text: string,
  voice: string,
  rate: ResamplerRate,
  opts: { format: 'pcm' | 'wav'; signal?: AbortSignal },
): Promise<Int16Array> {
  const response = await post(
    endpoint,
    '/audio/speech',
    {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: endpoint.model, input: text, voice, response_format: opts.format }),
    },
    opts.signal,
  );
  const bytes = Buffer.from(await response.arrayBuffer());
  if (bytes.length >= 12 && bytes.toString('latin1', 0, 4) === 'RIFF') {
    const wav = parseWav(bytes);
    return resample(wav.pcm, wav.sampleRate, rate);
  }
  if (bytes.length % 2 !== 0) throw new SpeechHttpError('/audio/speech: PCM answer of an odd number of bytes');
  const pcm = new Int16Array(bytes.length / 2);
  for (let i = 0; i < pcm.length; i++) pcm[i] = bytes.readInt16LE(i * 2);
  return resample(pcm, SPEECH_PCM_RATE, rate);
}
