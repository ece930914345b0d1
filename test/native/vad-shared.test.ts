// The native VAD shares its read-only tables (the windowed FFT per window length, the half-band filter) across
// detectors and keeps its transform's working arrays per thread (native/src/vad.h, fft.h): a detector's
// output must not depend on the other detectors running beside it, on the same thread or on worker threads
// (media workers are threads). Each detector's trace (events, and every frame's probability, exactly) is
// compared with the trace of the same input through a detector running alone.
import t from 'tap';
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { Resampler, type ResamplerRate } from '../../src/media/native/resampler.js';
import { VAD_SPEECH_END, VAD_SPEECH_START, Vad } from '../../src/media/native/vad.js';
import { addWhiteNoise, isSpeechPrompt, listPrompts, loadPrompt, pad, PROMPT_RATE } from './speech-corpus.js';

const ADDON = fileURLToPath(new URL('../../native/build/Release/parley_dsp.node', import.meta.url));
const PROMPTS = 4;
const SNR_DB = 10;
const NOISE_SEED = 7;
// 20 ms frames at each rate.
const frameAt = (rate: number): number => rate / 50;

// The prompt at rate (PROMPT_RATE or resampled).
function atRate(x: Int16Array, rate: ResamplerRate): Int16Array {
  if (rate === PROMPT_RATE) return x;
  const r = new Resampler(PROMPT_RATE, rate, x.length);
  const out = new Int16Array(r.maxOutput(x.length));
  const n = r.process(x, out);
  r.destroy();
  return out.slice(0, n);
}

interface Input {
  rate: ResamplerRate;
  x: Int16Array;
}

// Events and probabilities, frame by frame, as one string (compared exactly).
function traceAlone(input: Input): string {
  const vad = new Vad(input.rate);
  const frame = frameAt(input.rate);
  const out: string[] = [];
  for (let i = 0; i + frame <= input.x.length; i += frame) {
    const e = vad.process(input.x.subarray(i, i + frame));
    out.push(`${e & (VAD_SPEECH_START | VAD_SPEECH_END)}:${vad.probability}`);
  }
  vad.destroy();
  return out.join(' ');
}

// All inputs through their own detectors, one frame of each in turn (the detectors created together).
function traceInterleaved(inputs: Input[]): string[] {
  const vads = inputs.map((input) => new Vad(input.rate));
  const traces: string[][] = inputs.map(() => []);
  const frames = Math.min(...inputs.map((input) => Math.floor(input.x.length / frameAt(input.rate))));
  for (let f = 0; f < frames; f++) {
    inputs.forEach((input, j) => {
      const frame = frameAt(input.rate);
      const e = vads[j]!.process(input.x.subarray(f * frame, (f + 1) * frame));
      traces[j]!.push(`${e & (VAD_SPEECH_START | VAD_SPEECH_END)}:${vads[j]!.probability}`);
    });
  }
  for (const vad of vads) vad.destroy();
  return traces.map((trace) => trace.join(' '));
}

const speech = listPrompts().filter(isSpeechPrompt).slice(0, PROMPTS);
const prompts = speech.map((name) => pad(loadPrompt(name), PROMPT_RATE));
const noisy = prompts.map((x, i) => addWhiteNoise(x, 1e6, SNR_DB, NOISE_SEED + i));
const shortest = Math.min(...prompts.map((x) => x.length), ...noisy.map((x) => x.length));
const cut = (x: Int16Array): Int16Array => x.slice(0, shortest);

t.test('detectors interleaved frame by frame on one thread trace exactly as each alone', async (t) => {
  const inputs: Input[] = [
    ...prompts.map((x) => ({ rate: 8000 as ResamplerRate, x: cut(x) })),
    ...noisy.map((x) => ({ rate: 8000 as ResamplerRate, x: cut(x) })),
    { rate: 16000, x: atRate(cut(prompts[0]!), 16000) },
    { rate: 48000, x: atRate(cut(noisy[1]!), 48000) },
    { rate: 44100, x: atRate(cut(prompts[2]!), 44100) },
  ];
  const together = traceInterleaved(inputs);
  inputs.forEach((input, j) => t.equal(together[j], traceAlone(input), `input ${j} at ${input.rate} Hz`));
  // The traces differ between inputs (a trace that ignored its input would pass the comparison above).
  t.not(together[0], together[1]);
});

t.test('detectors on worker threads, created at once, trace exactly as on the main thread', async (t) => {
  // 24 kHz: no detector of that window length exists yet in this process, so the workers race to build the
  // shared tables.
  const inputs: Input[] = [
    { rate: 24000, x: atRate(cut(prompts[1]!), 24000) },
    { rate: 24000, x: atRate(cut(noisy[3]!), 24000) },
    { rate: 8000, x: cut(noisy[0]!) },
  ];
  const worker = `
    const { parentPort, workerData } = require('node:worker_threads');
    const addon = require(workerData.addon);
    const { rate, x } = workerData;
    const frame = rate / 50;
    const h = addon.createVad(rate, 0.38, 500, 50, 800);
    const info = new Float64Array(5);
    const out = [];
    for (let i = 0; i + frame <= x.length; i += frame) {
      const e = addon.vadProcess(h, x.subarray(i, i + frame));
      addon.vadInfo(h, info);
      out.push((e & 3) + ':' + info[0]);
    }
    addon.destroy(h);
    parentPort.postMessage(out.join(' '));
  `;
  const runs = inputs
    .flatMap((input) => [input, input])
    .map(
      (input) =>
        new Promise<string>((resolve, reject) => {
          const w = new Worker(worker, { eval: true, workerData: { addon: ADDON, rate: input.rate, x: input.x } });
          w.once('message', resolve);
          w.once('error', reject);
        }),
    );
  const traces = await Promise.all(runs);
  inputs.forEach((input, j) => {
    const alone = traceAlone(input);
    t.equal(traces[2 * j], alone, `input ${j} at ${input.rate} Hz, first worker`);
    t.equal(traces[2 * j + 1], alone, `input ${j} at ${input.rate} Hz, second worker`);
  });
});
