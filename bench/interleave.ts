// The recording's stereo interleave (src/media/recording.ts, once per 20 ms tick per conversation): the JS loop
// (32-bit pair stores) against the native call (native/src/pcm_interleave.h) for a frame of n samples per side.
// Reported: CPU (user + system) per call, the median of ROUNDS rounds that alternate the two paths, and the
// ratio of the medians. Usage: node --import tsx bench/interleave.ts   Env: INTERLEAVE_CALLS (200000 per round)
import { interleaveStereoInto } from '../src/media/native.js';
import { interleavePairs, recordingBlock } from '../src/media/recording.js';

const CALLS = Number(process.env.INTERLEAVE_CALLS ?? 200_000);
const ROUNDS = 7;
/** Frame sizes: 20 ms at 8, 16 and 24 kHz, and small ones to find where the crossing stops paying. */
const SIZES = [8, 16, 32, 64, 160, 320, 480];
/** Pairs per block: one second at 24 kHz, as a recording's block. */
const BLOCK_PAIRS = 24_000;

const arena = Int16Array.from({ length: 4 * 480 }, (_, i) => (i * 331) & 0x7fff);
const block = recordingBlock(BLOCK_PAIRS);

function cpuNsPerCall(run: (at: number) => void, n: number): number {
  const start = process.cpuUsage();
  for (let c = 0, at = 0; c < CALLS; c++) {
    run(at);
    at += n;
    if (at + n > BLOCK_PAIRS) at = 0;
  }
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / CALLS;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];

for (const n of SIZES) {
  const js = (at: number): void => interleavePairs(block.pairs, at, arena, 0, 960, n);
  const native = (at: number): void => interleaveStereoInto(arena, 0, arena, 960, n, block.samples, at);
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    a.push(cpuNsPerCall(js, n));
    b.push(cpuNsPerCall(native, n));
  }
  const mj = median(a);
  const mn = median(b);
  process.stdout.write(`n=${n}\tjs ${mj.toFixed(0)} ns\tnative ${mn.toFixed(0)} ns\tnative/js ${(mn / mj).toFixed(2)}\n`);
}
