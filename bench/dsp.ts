// Micro benchmark of the native DSP kernels (native/, via src/media/native/): CPU ns and heap bytes per
// 20 ms frame for each module, and per stream for the batched outbound calls. Results to bench/results/dsp.json.
// Usage: node --import tsx bench/dsp.ts   (re-runs itself pinned to core 1 with --expose-gc)
// Env: DSP_FRAMES (5000 per run; 3 runs, median reported).
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import {
  G711_MULAW,
  alawDecodeInto,
  alawEncodeInto,
  applyGain,
  encodeBatch,
  float32ToPcm16Into,
  mixInto,
  mulawDecodeInto,
  mulawEncodeInto,
  pcm16ToFloat32Into,
} from '../src/media/native/g711.js';
import { Resampler, resampleEncodeBatch, type ResamplerRate } from '../src/media/native/resampler.js';
import { Vad } from '../src/media/native/vad.js';
import { DtmfDetector } from '../src/media/native/dtmf.js';
import { ToneDetector } from '../src/media/native/tone.js';
import { measurePerFrame, median } from './measure.js';

const SELF = fileURLToPath(import.meta.url);
const FRAMES = Number(process.env.DSP_FRAMES ?? 5000);
const RUNS = 3;
const BATCH_STREAMS = 200;
const FRAME_20MS: Record<ResamplerRate, number> = {
  8000: 160,
  16000: 320,
  22050: 441,
  24000: 480,
  44100: 882,
  48000: 960,
};

interface Result {
  module: string;
  nsPerFrame: number;
  bytesPerFrame: number | null;
}

/** A deterministic speech-like signal (harmonics under a syllable envelope) at `rate`, `seconds` long. */
function signal(rate: number, seconds = 2): Int16Array {
  const x = new Int16Array(rate * seconds);
  for (let i = 0; i < x.length; i++) {
    const t = i / rate;
    const env = Math.max(0, Math.sin(2 * Math.PI * 3 * t));
    let v = 0;
    for (let h = 1; h <= 10; h++) v += Math.sin(2 * Math.PI * 150 * h * t) / h;
    x[i] = Math.round(6000 * env * v + 200 * Math.sin(i * 12.9898));
  }
  return x;
}

/** 20 ms frame views of a signal, made once so the loop allocates nothing. */
function frames(rate: ResamplerRate): Int16Array[] {
  const x = signal(rate);
  const n = FRAME_20MS[rate];
  return Array.from({ length: Math.floor(x.length / n) }, (_, i) => x.subarray(i * n, (i + 1) * n));
}

/** CPU time per call (median of RUNS, after a warm-up), and heap growth per call over GC-free windows. */
function measure(module: string, fn: (i: number) => void, perCall = 1): Result {
  const cost = measurePerFrame(fn, { warmup: 2000, frames: FRAMES, runs: RUNS, heapWindow: 1000, perCall });
  return { module, nsPerFrame: Math.round(median(cost.runsNs)), bytesPerFrame: cost.bytesPerFrame };
}

function run(): Result[] {
  const out: Result[] = [];
  const f8 = frames(8000);
  const F = f8.length;
  const bytes = new Uint8Array(160);
  const pcm = new Int16Array(160);
  const floats = new Float32Array(160);
  const work = new Int16Array(160);
  mulawEncodeInto(f8[0], bytes);

  out.push(measure('g711 mu-law encode (160)', (i) => void mulawEncodeInto(f8[i % F], bytes)));
  out.push(measure('g711 mu-law decode (160)', () => void mulawDecodeInto(bytes, pcm)));
  out.push(measure('g711 A-law encode (160)', (i) => void alawEncodeInto(f8[i % F], bytes)));
  out.push(measure('g711 A-law decode (160)', () => void alawDecodeInto(bytes, pcm)));
  out.push(measure('pcm16 -> float32 (160)', (i) => void pcm16ToFloat32Into(f8[i % F], floats)));
  out.push(measure('float32 -> pcm16 (160)', () => void float32ToPcm16Into(floats, pcm)));
  out.push(measure('gain (160)', () => applyGain(work, 0.9)));
  out.push(measure('mix (160)', (i) => mixInto(work, f8[i % F], 0.5)));

  const pairs: [ResamplerRate, ResamplerRate][] = [
    [8000, 16000],
    [16000, 8000],
    [8000, 24000],
    [24000, 8000],
    [48000, 8000],
    [8000, 48000],
    [22050, 8000],
    [44100, 48000],
    [48000, 16000],
  ];
  for (const [from, to] of pairs) {
    const fx = frames(from);
    const r = new Resampler(from, to, FRAME_20MS[from]);
    const o = new Int16Array(r.maxOutput(FRAME_20MS[from]));
    out.push(measure(`resample ${from}->${to}`, (i) => void r.process(fx[i % fx.length], o)));
    r.destroy();
  }

  for (const rate of [8000, 16000, 24000] as const) {
    const fx = frames(rate);
    const vad = new Vad(rate);
    out.push(measure(`VAD ${rate}`, (i) => void vad.process(fx[i % fx.length])));
    vad.destroy();
  }
  const dtmf = new DtmfDetector(8000);
  const digits = new Uint8Array(8);
  out.push(measure('DTMF detector 8000', (i) => void dtmf.process(f8[i % F], digits)));
  dtmf.destroy();
  const tone = new ToneDetector(8000);
  out.push(measure('tone (beep) detector 8000', (i) => void tone.process(f8[i % F])));
  tone.destroy();

  // Outbound batches: BATCH_STREAMS streams per call, reported per stream.
  const f24 = frames(24000);
  const resamplers = Array.from({ length: BATCH_STREAMS }, () => new Resampler(24000, 8000, 480));
  const inputs = Array.from({ length: BATCH_STREAMS }, (_, s) => f24[s % f24.length]);
  const outs = Array.from({ length: BATCH_STREAMS }, () => new Uint8Array(160));
  const scratch = new Int16Array(resamplers[0].maxOutput(480));
  const written = new Int32Array(BATCH_STREAMS);
  out.push(
    measure(
      `batch resample 24k->8k + mu-law encode (per stream, ${BATCH_STREAMS} streams/call)`,
      () => resampleEncodeBatch(G711_MULAW, resamplers, inputs, scratch, outs, written),
      BATCH_STREAMS,
    ),
  );
  const pcmFrames = Array.from({ length: BATCH_STREAMS }, (_, s) => f8[s % F]);
  out.push(
    measure(
      `batch mu-law encode (per stream, ${BATCH_STREAMS} streams/call)`,
      () => void encodeBatch(G711_MULAW, pcmFrames, outs),
      BATCH_STREAMS,
    ),
  );
  // The same work stream by stream, for the crossing cost the batch saves.
  out.push(
    measure('unbatched resample 24k->8k + mu-law encode (per stream)', (i) => {
      const s = i % BATCH_STREAMS;
      const n = resamplers[s].process(inputs[s], scratch);
      mulawEncodeInto(scratch.subarray(0, n), outs[s]);
    }),
  );
  for (const r of resamplers) r.destroy();
  return out;
}

if (process.argv.includes('--child')) {
  process.stdout.write(JSON.stringify(run()));
} else {
  // Pinned to core 1 (the machine has 2 cores shared with others) with --expose-gc for the allocation figures.
  const child = spawnSync(
    'taskset',
    ['-c', '1', process.execPath, '--expose-gc', '--max-semi-space-size=64', '--import', 'tsx', SELF, '--child'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  if (child.status !== 0) throw new Error(`benchmark child failed: ${child.status}`);
  const results = JSON.parse(child.stdout) as Result[];
  for (const r of results) {
    console.log(
      `${r.module.padEnd(80)} ${String(r.nsPerFrame).padStart(8)} ns/frame  ${r.bytesPerFrame ?? '-'} B/frame`,
    );
  }
  const load = os.loadavg();
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL('./results/dsp.json', import.meta.url),
    JSON.stringify(
      {
        benchmark: 'dsp',
        date: new Date().toISOString(),
        machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadavg: load },
        method: `CPU time (user+sys) per call, median of ${RUNS} runs of ${FRAMES} calls, pinned to core 1; heap bytes per call over GC-free windows`,
        results,
      },
      null,
      2,
    ) + '\n',
  );
}
