// How far V8 lets the old generation grow between full collections, for every isolate of the process (V8 flags
// are per process): set before the media workers start, it is their GC schedule that it is for.
//
// A worker at N=500 conversations (bench/sts.ts, one pinned core) keeps ~29 MB live in its old generation and
// allocates young garbage at ~8 MB/s (one ArrayBuffer and one view per client message, timers, events). V8's own
// growing factor put the next limit at ~52 MB, which left less room than the young generation can promote at
// once; V8 then (heap.cc, IncrementalMarkingLimitReached: "soft limit") starts incremental marking at once, by a
// task, right after the previous cycle ends: 24-26 mark-compacts a minute, each a 5-15 ms pause on the worker,
// and concurrent marking threads sharing its core for ~60 ms each time. Measured over 30 s windows at N=500
// (medians of the runs in the commit message):
//   growing percent   mark-compacts/min   turn latency p99   outbound jitter p99
//   V8's default            24-26            6.4-7.5 ms          15-16 ms
//   100 (x2)                 10                4.3 ms              9.7 ms
//   300 (x4)                  4                2.6 ms             10.2 ms
// CPU did not move beyond the noise (40-42% of a core). The price is memory: the old generation may reach four
// times what survived the last full collection (~120 MB for that worker instead of ~52 MB) before the next one.
import { setFlagsFromString } from 'node:v8';

/** The old generation may grow to (1 + this / 100) times its live size before a full collection starts. */
export const HEAP_GROWING_PERCENT = 300;

/** Sets the growing factor for the process (setting it again changes nothing); call before the media workers start. */
export function tuneHeapForMedia(): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
