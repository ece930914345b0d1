// Per-frame cost of a synchronous step, shared by the micro benchmarks (bench/dsp.ts, bench/media.ts, bench/vad.ts):
// CPU time per call over a few timed runs after a warm-up, and heap bytes per call over GC-free windows.

declare const gc: (() => void) | undefined;

export interface PerFrameOptions {
  /** Calls before timing (long enough for the optimizing compiler to land). */
  warmup: number;
  /** Calls per timed run. */
  frames: number;
  /** Timed runs. */
  runs: number;
  /** Calls per allocation window (short enough that no scavenge runs inside it). */
  heapWindow: number;
  /** Units of work per call (streams per batched call): figures are per unit. */
  perCall?: number;
}

export interface PerFrameCost {
  /** CPU ns (user+sys) per unit of each timed run. */
  runsNs: number[];
  /** Least heap growth per unit over 3 GC-free windows; null without --expose-gc. */
  bytesPerFrame: number | null;
}

/** Median (mean of the middle two for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Runs fn(i) for warm-up, timed runs and allocation windows (i counting from 0 in each). */
export function measurePerFrame(fn: (i: number) => void, opts: PerFrameOptions): PerFrameCost {
  const perCall = opts.perCall ?? 1;
  for (let i = 0; i < opts.warmup; i++) fn(i);
  // CPU time of this process, not wall time: the machine is shared, and a busy neighbour must not count.
  const runsNs: number[] = [];
  for (let r = 0; r < opts.runs; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < opts.frames; i++) fn(i);
    const c = process.cpuUsage(c0);
    runsNs.push(((c.user + c.system) * 1000) / opts.frames / perCall);
  }
  let bytesPerFrame: number | null = null;
  if (typeof gc === 'function') {
    const deltas: number[] = [];
    for (let r = 0; r < 3; r++) {
      gc();
      const h0 = process.memoryUsage().heapUsed;
      for (let i = 0; i < opts.heapWindow; i++) fn(i);
      deltas.push(Math.max(0, (process.memoryUsage().heapUsed - h0) / opts.heapWindow / perCall));
    }
    bytesPerFrame = Math.min(...deltas);
  }
  return { runsNs, bytesPerFrame };
}
