// Micro benchmark of the native VAD (native/src/vad.cc through src/media/native/vad.ts): CPU ns and heap bytes per
// 20 ms frame at each input rate, on speech-like bursts in white noise (so speech starts and ends are part of
// the work, as in a call). 16 kHz is analysed at 8 kHz inside the VAD (half-band decimation), the other rates
// as they come. Results to bench/results/vad.json with the load average.
// Usage: node --import tsx bench/vad.ts   (re-runs itself pinned to core 1 with --expose-gc)
// Env: VAD_FRAMES (20000 per run; 5 runs, median reported). VAD_COMPARE=<another build of parley_dsp.node> (e.g.
// a copy taken before a change): also runs of that build, interleaved with runs of this one (one each in turn, so
// the machine's load hits both alike), with the median of the paired ratios.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import type { ResamplerRate } from '../src/media/native/resampler.js';
import { VAD_DEFAULTS, Vad } from '../src/media/native/vad.js';
import { seededRandom } from '../src/media/noise.js';
import { measurePerFrame, median } from './measure.js';

const SELF = fileURLToPath(import.meta.url);
const FRAMES = Number(process.env.VAD_FRAMES ?? 20000);
const RUNS = 5;
const COMPARE = process.env.VAD_COMPARE;
// Interleaved runs when comparing (more of them: paired ratios are what the comparison reports).
const COMPARE_RUNS = 11;
const WARMUP_FRAMES = 2000;
const RATES: ResamplerRate[] = [8000, 16000, 24000, 48000];
const SIGNAL_SECONDS = 8;
// Speech-like bursts: 1.2 s of harmonics (150 Hz fundamental, 10 partials) under a syllable envelope, then
// 1.2 s of noise alone; white noise throughout 20 dB under the bursts' peak.
const BURST_SECONDS = 1.2;
const BURST_AMPLITUDE = 6000;
const NOISE_RMS = 600;

interface Result {
  rateHz: number;
  nsPerFrame: number;
  runsNs: number[];
  bytesPerFrame: number | null;
  speechStarts: number;
  /** With VAD_COMPARE: interleaved runs of this build and the other, and the median of other / this per pair. */
  compare?: { addon: string; thisRunsNs: number[]; otherRunsNs: number[]; otherOverThis: number };
}

/** The raw per-frame entry points of another build of the addon. */
interface OtherAddon {
  createVad(rateHz: number, threshold: number, prebufferMs: number, minSpeechMs: number, minSilenceMs: number): unknown;
  vadProcess(handle: unknown, frame: Int16Array): number;
  destroy(handle: unknown): void;
}

function signal(rate: number): Int16Array {
  const x = new Int16Array(rate * SIGNAL_SECONDS);
  const rand = seededRandom(rate);
  for (let i = 0; i < x.length; i++) {
    const t = i / rate;
    const inBurst = Math.floor(t / BURST_SECONDS) % 2 === 1;
    const env = inBurst ? Math.abs(Math.sin(2 * Math.PI * 2.5 * t)) : 0;
    let v = 0;
    for (let h = 1; h <= 10; h++) v += Math.sin(2 * Math.PI * 150 * h * t) / h;
    // Uniform noise of RMS NOISE_RMS (a uniform on [-a, a] has RMS a / sqrt(3)).
    const noise = (2 * rand() - 1) * NOISE_RMS * Math.sqrt(3);
    x[i] = Math.max(-32768, Math.min(32767, Math.round(BURST_AMPLITUDE * env * v + noise)));
  }
  return x;
}

/** 20 ms frame views, made once so the measured loop allocates nothing. */
function frames(rate: number): Int16Array[] {
  const x = signal(rate);
  const n = rate / 50;
  return Array.from({ length: Math.floor(x.length / n) }, (_, i) => x.subarray(i * n, (i + 1) * n));
}

function measure(rate: ResamplerRate): Result {
  const fx = frames(rate);
  const vad = new Vad(rate);
  let starts = 0;
  const step = (i: number) => {
    if (vad.process(fx[i % fx.length]) & 1) starts++;
  };
  const cost = measurePerFrame(step, { warmup: WARMUP_FRAMES, frames: FRAMES, runs: RUNS, heapWindow: 1000 });
  const result: Result = {
    rateHz: rate,
    nsPerFrame: Math.round(median(cost.runsNs)),
    runsNs: cost.runsNs.map(Math.round),
    bytesPerFrame: cost.bytesPerFrame,
    speechStarts: starts,
  };
  if (COMPARE) result.compare = compare(rate, fx, step);
  vad.destroy();
  return result;
}

function compare(rate: ResamplerRate, fx: Int16Array[], step: (i: number) => void): NonNullable<Result['compare']> {
  const other = createRequire(import.meta.url)(COMPARE as string) as OtherAddon;
  const d = VAD_DEFAULTS;
  const handle = other.createVad(rate, d.threshold, d.prebufferMs, d.minSpeechMs, d.minSilenceMs);
  const otherStep = (i: number) => {
    other.vadProcess(handle, fx[i % fx.length]);
  };
  const one = { warmup: WARMUP_FRAMES, frames: FRAMES, runs: 1, heapWindow: 0 };
  const thisRunsNs: number[] = [];
  const otherRunsNs: number[] = [];
  for (let r = 0; r < COMPARE_RUNS; r++) {
    // Alternating which goes first.
    const order = r % 2 === 0 ? [step, otherStep] : [otherStep, step];
    for (const fn of order) (fn === step ? thisRunsNs : otherRunsNs).push(...measurePerFrame(fn, one).runsNs);
  }
  other.destroy(handle);
  return {
    addon: COMPARE as string,
    thisRunsNs: thisRunsNs.map(Math.round),
    otherRunsNs: otherRunsNs.map(Math.round),
    otherOverThis: Number(median(otherRunsNs.map((o, i) => o / thisRunsNs[i])).toFixed(3)),
  };
}

if (process.argv.includes('--child')) {
  process.stdout.write(JSON.stringify(RATES.map(measure)));
} else {
  const loadBefore = os.loadavg();
  // Pinned to core 1 (the machine has 2 cores shared with others) with --expose-gc for the allocation figures.
  const child = spawnSync('taskset', ['-c', '1', process.execPath, '--expose-gc', '--import', 'tsx', SELF, '--child'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (child.status !== 0) throw new Error(`benchmark child failed: ${child.status}`);
  const results = JSON.parse(child.stdout) as Result[];
  for (const r of results) {
    console.log(
      `VAD ${String(r.rateHz).padStart(5)} Hz: ${String(r.nsPerFrame).padStart(6)} ns per 20 ms frame (runs ${r.runsNs.join(', ')}), ` +
        `${r.bytesPerFrame ?? '-'} B/frame, ${r.speechStarts} speech starts`,
    );
    if (r.compare) {
      console.log(
        `  vs ${r.compare.addon}: interleaved medians ${median(r.compare.thisRunsNs).toFixed(0)} ns (this) and ` +
          `${median(r.compare.otherRunsNs).toFixed(0)} ns (other), other / this ${r.compare.otherOverThis} (median of pairs)`,
      );
    }
  }
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL('./results/vad.json', import.meta.url),
    JSON.stringify(
      {
        benchmark: 'vad',
        date: new Date().toISOString(),
        machine: {
          cpus: os.cpus().length,
          model: os.cpus()[0]?.model,
          loadavgBefore: loadBefore,
          loadavgAfter: os.loadavg(),
        },
        method:
          `CPU time (user+sys) per Vad.process() of one 20 ms frame, median of ${RUNS} runs of ${FRAMES} frames after ` +
          `${WARMUP_FRAMES} warm-up frames, pinned to core 1; speech-like bursts in white noise; heap bytes per frame over GC-free windows`,
        results,
      },
      null,
      2,
    ) + '\n',
  );
}
