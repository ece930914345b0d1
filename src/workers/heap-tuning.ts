// How far V8 lets the old generation grow between full collections, for every isolate of the process (V8 flags
// are per process): set before the media workers start, it is their GC schedule that it is for.
//
// A media worker keeps a modest live old generation and promotes young garbage steadily (a buffer per client
// message, timers, events). With V8's default growing factor the next limit sits so close to the live size that
// incremental marking starts again right after each cycle ends: frequent mark-compact pauses on the worker, which
// show in turn latency and outbound jitter. A larger factor trades memory for fewer collections: the old generation
// may reach four times what survived the last full collection before the next one (bench/sts.ts measures it).
import { setFlagsFromString } from 'node:v8';

/** The old generation may grow to (1 + this / 100) times its live size before a full collection starts. */
export const HEAP_GROWING_PERCENT = 300;

/** Sets the growing factor for the process (setting it again changes nothing); call before the media workers start. */
export function tuneHeapForMedia(): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
