// What a media worker measures on its hot paths, in preallocated histograms and plain counters (no allocation per
// frame or packet): one instance per thread (each worker thread loads its own copy of this module). The worker entry
// posts a snapshot to main periodically (src/workers/worker.ts); main serves them (node.ts).
import { FixedHistogram, FRAME_SECONDS, JITTER_SECONDS, LATENCY_SECONDS, type HistogramSnapshot } from './histogram.js';
import type { RuntimeSnapshot } from './runtime.js';

/** Inbound RTP of the worker's calls, since start: ended calls' totals plus the live ones'. */
export interface RtpTotals {
  received: number;
  lost: number;
  late: number;
}

/** A worker's metrics as they cross to main (plain data). */
export interface WorkerMetricsSnapshot {
  runtime: RuntimeSnapshot;
  /** Time the worker's pacing clock spent on one frame: every conversation's tick and the calls' packets. */
  frame: HistogramSnapshot;
  /** A turn's end of user speech to the first assistant frame sent (the record's analysis.latencies_ms). */
  firstAudio: HistogramSnapshot;
  /** Each ended call's inbound interarrival jitter (RFC 3550 A.8). */
  rtpJitter: HistogramSnapshot;
  rtp: RtpTotals;
  /** Live conversations by origin (STS and calls), and the calls held (being set up or live) by origin. */
  conversations: Record<string, number>;
  calls: Record<string, number>;
}

export class MediaMetrics {
  readonly frame = new FixedHistogram(FRAME_SECONDS);
  readonly firstAudio = new FixedHistogram(LATENCY_SECONDS);
  readonly rtpJitter = new FixedHistogram(JITTER_SECONDS);
  /** Ended calls' inbound RTP (live calls' are added at snapshot time). */
  readonly rtpEnded: RtpTotals = { received: 0, lost: 0, late: 0 };
}

/** This thread's media metrics. */
export const mediaMetrics = new MediaMetrics();
