// Micro benchmark of the native time-stretch (native/src/time_stretch.cc through src/media/time-stretch.ts): CPU ns
// per synthesis hop (half a 25 ms window: what one segment search and overlap-add produce) on real speech, every
// prompt of Debian's asterisk-core-sounds-en-wav (en_US_f_Allison, 8 kHz) stretched as one utterance in 20 ms chunks
// at audio_speed 1.2 (the default), at 8 kHz and upsampled to 16 kHz. Results to bench/results/time-stretch.json.
// Usage: node --import tsx bench/time-stretch.ts
// Env: TS_RUNS (11 runs of the whole corpus, median reported). TS_COMPARE=<another build of parley_dsp.node> (e.g.
// one built from main): runs of that build interleaved with runs of this one (one each in turn, so the machine's
// load hits both alike), the median of the paired ratios, and whether the two builds' outputs are identical.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { TimeStretch } from '../src/media/time-stretch.js';
import { SOUNDS_DIR, loadPrompt } from '../test/media/speech.js';
import { measurePerFrame, median } from './measure.js';

const RUNS = Number(process.env.TS_RUNS ?? 11);
const COMPARE = process.env.TS_COMPARE;
const SPEED = 1.2;
const RATES = [8000, 16000];

interface Result {
  rateHz: number;
  hopsPerPass: number;
  nsPerHop: number;
  runsNs: number[];
  /** With TS_COMPARE: interleaved runs of this build and the other, the median of other / this per pair. */
  compare?: { addon: string; thisRunsNs: number[]; otherRunsNs: number[]; otherOverThis: number; sameOutput: boolean };
}

/** The raw entry points of another build of the addon. */
interface OtherAddon {
  createTimeStretch(rateHz: number, maxInput: number, speed: number): unknown;
  timeStretchProcess(handle: unknown, input: Int16Array, out: Int16Array, length: number): number;
  timeStretchFlush(handle: unknown, out: Int16Array): number;
  destroy(handle: unknown): void;
}

interface Stretcher {
  process(input: Int16Array, out: Int16Array): number;
  flush(out: Int16Array): number;
}

/** x at twice its rate by linear interpolation. */
function upsample2(x: Int16Array): Int16Array {
  const y = new Int16Array(2 * x.length);
  for (let i = 0; i < x.length; i++) {
    y[2 * i] = x[i];
    y[2 * i + 1] = Math.round((x[i] + (i + 1 < x.length ? x[i + 1] : 0)) / 2);
  }
  return y;
}

/** The corpus at `rate` as 20 ms chunk views, one list per prompt (made once: the timed loop allocates nothing). */
function corpus(rate: number): Int16Array[][] {
  const names = readdirSync(SOUNDS_DIR)
    .filter((f) => f.endsWith('.wav'))
    .sort();
  const chunk = rate / 50;
  return names.map((f) => {
    const x8 = loadPrompt(f.slice(0, -4));
    const x = rate === 8000 ? x8 : upsample2(x8);
    const chunks: Int16Array[] = [];
    for (let i = 0; i < x.length; i += chunk) chunks.push(x.subarray(i, Math.min(i + chunk, x.length)));
    return chunks;
  });
}

/** Stretches every prompt; returns the samples written, and feeds them to `digest` if given. */
function pass(ts: Stretcher, prompts: Int16Array[][], out: Int16Array, digest?: (x: Int16Array) => void): number {
  let written = 0;
  for (const chunks of prompts) {
    for (const c of chunks) {
      const n = ts.process(c, out);
      digest?.(out.subarray(0, n));
      written += n;
    }
    const n = ts.flush(out);
    digest?.(out.subarray(0, n));
    written += n;
  }
  return written;
}

function sha(ts: Stretcher, prompts: Int16Array[][], out: Int16Array): string {
  const h = createHash('sha256');
  pass(ts, prompts, out, (x) => h.update(x));
  return h.digest('hex');
}

function measure(rate: number): Result {
  const prompts = corpus(rate);
  const hop = Math.round((rate * 0.025) / 2);
  const ts = new TimeStretch({ sampleRate: rate, maxInput: rate / 50, speed: SPEED });
  const out = new Int16Array(ts.maxOutput(rate / 50) + rate);
  const hops = pass(ts, prompts, out) / hop;
  const step = () => void pass(ts, prompts, out);
  // One call is a pass over the corpus: per hop is per call / hops.
  const opts = { warmup: 1, frames: 1, runs: RUNS, heapWindow: 0, perCall: hops };
  const cost = measurePerFrame(step, opts);
  const result: Result = {
    rateHz: rate,
    hopsPerPass: hops,
    nsPerHop: Math.round(median(cost.runsNs)),
    runsNs: cost.runsNs.map(Math.round),
  };
  if (COMPARE) {
    const other = createRequire(import.meta.url)(COMPARE) as OtherAddon;
    const handle = other.createTimeStretch(rate, rate / 50, SPEED);
    const theirs: Stretcher = {
      process: (input, o) => other.timeStretchProcess(handle, input, o, input.length),
      flush: (o) => other.timeStretchFlush(handle, o),
    };
    const otherStep = () => void pass(theirs, prompts, out);
    const one = { ...opts, runs: 1 };
    const thisRunsNs: number[] = [];
    const otherRunsNs: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      // Alternating which goes first.
      const order = r % 2 === 0 ? [step, otherStep] : [otherStep, step];
      for (const fn of order) (fn === step ? thisRunsNs : otherRunsNs).push(...measurePerFrame(fn, one).runsNs);
    }
    result.compare = {
      addon: COMPARE,
      thisRunsNs: thisRunsNs.map(Math.round),
      otherRunsNs: otherRunsNs.map(Math.round),
      otherOverThis: Number(median(otherRunsNs.map((o, i) => o / thisRunsNs[i])).toFixed(3)),
      sameOutput: sha(ts, prompts, out) === sha(theirs, prompts, out),
    };
    other.destroy(handle);
  }
  ts.destroy();
  return result;
}

const loadBefore = os.loadavg();
const results = RATES.map(measure);
for (const r of results) {
  console.log(
    `time-stretch ${String(r.rateHz).padStart(5)} Hz x${SPEED}: ${r.nsPerHop} ns per hop (runs ${r.runsNs.join(', ')}), ` +
      `${r.hopsPerPass} hops per pass`,
  );
  if (r.compare) {
    console.log(
      `  vs ${r.compare.addon}: interleaved medians ${median(r.compare.thisRunsNs).toFixed(0)} ns (this) and ` +
        `${median(r.compare.otherRunsNs).toFixed(0)} ns (other), other / this ${r.compare.otherOverThis} (median of pairs), ` +
        `output ${r.compare.sameOutput ? 'identical' : 'DIFFERENT'}`,
    );
  }
}
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(
  new URL('./results/time-stretch.json', import.meta.url),
  JSON.stringify(
    {
      benchmark: 'time-stretch',
      date: new Date().toISOString(),
      machine: {
        cpus: os.cpus().length,
        model: os.cpus()[0]?.model,
        loadavgBefore: loadBefore,
        loadavgAfter: os.loadavg(),
      },
      method:
        `CPU time (user+sys) per synthesis hop, median of ${RUNS} passes over every en_US_f_Allison prompt (20 ms ` +
        `chunks, a flush per prompt) at speed ${SPEED}, after one warm-up pass`,
      results,
    },
    null,
    2,
  ) + '\n',
);
