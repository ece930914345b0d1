// The stereo recorder's per-frame work (src/media/recording.ts) at the scale of a loaded worker: N recorders, each
// per 20 ms tick fed a user frame, an assistant frame in half the ticks (the assistant speaks half the time), and
// ticked, as a conversation's pacing tick does. Reported: the synchronous time per conversation-tick (ns; the
// file writes run on libuv's pool meanwhile, outside the figure), the median of ROUNDS rounds, at a few N: with N
// large, each recorder's state is cold when its turn comes, which is what a worker with 500 conversations pays.
// Usage: node --import tsx bench/recorder.ts   Env: RECORDER_N ("10,500"), RECORDER_SEC (audio seconds per round, 4;
// more for small N, so that a round ticks recorders at least 100,000 times)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { StereoRecorder } from '../src/media/recording.js';

const NS = (process.env.RECORDER_N ?? '10,500').split(',').map(Number);
const SEC = Number(process.env.RECORDER_SEC ?? 4);
const ROUNDS = 5;
const RATE = 8000;
const FRAME = 160;
const TICKS_PER_SEC = 50;
const MIN_CALLS = 100_000;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const user = Int16Array.from({ length: FRAME }, (_, i) => ((i * 331) & 0x3fff) - 0x2000);
const assistant = Int16Array.from({ length: FRAME }, (_, i) => ((i * 127) & 0x3fff) - 0x2000);

async function round(n: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-recorder-'));
  try {
    const recs: StereoRecorder[] = [];
    for (let i = 0; i < n; i++) recs.push(await StereoRecorder.open(join(dir, `${i}.wav`), { sampleRate: RATE }));
    let busy = 0;
    // At least MIN_CALLS recorder ticks a round: a few recorders over a few seconds would time unoptimized code.
    const ticks = Math.max(SEC * TICKS_PER_SEC, Math.ceil(MIN_CALLS / n));
    for (let t = 0; t < ticks; t++) {
      const start = performance.now();
      for (let i = 0; i < n; i++) {
        const r = recs[i];
        r.writeUser(user);
        if (((t >> 4) + i) & 1) r.writeAssistant(assistant);
        r.tick();
      }
      busy += performance.now() - start;
      // Let the file writes complete between ticks, as the event loop does between clock frames.
      await new Promise((resolve) => setImmediate(resolve));
    }
    for (const r of recs) await r.finish();
    return (busy * 1e6) / (ticks * n);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const results: Record<string, number> = {};
for (const n of NS) {
  await round(n); // warm-up: the optimizing compiler, the block pools
  const rounds: number[] = [];
  for (let k = 0; k < ROUNDS; k++) rounds.push(await round(n));
  results[`n_${n}_ns_per_conversation_tick`] = Math.round(median(rounds));
}
process.stdout.write(JSON.stringify({ bench: 'recorder', sec_per_round: SEC, rounds: ROUNDS, ...results }) + '\n');
