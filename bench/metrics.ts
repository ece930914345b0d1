// What metrics cost a media worker and main (src/metrics/): per 20 ms frame, the frame's timing (two
// performance.now() and a fixed-bucket histogram observe), CPU ns and heap bytes; per second, a worker's snapshot;
// per scrape, main's exposition text with every histogram filled. Results to bench/results/metrics.json.
// The frame's heap bytes are performance.now()'s: each call returns a fresh heap number (16 B, as the pacing clock's
// own reading does); the histogram itself allocates nothing.
// Usage: node --expose-gc --import tsx bench/metrics.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { FixedHistogram, FRAME_SECONDS, JITTER_SECONDS, LATENCY_SECONDS, SpanTimer } from '../src/metrics/histogram.js';
import { NodeMetrics } from '../src/metrics/node.js';
import { RuntimeMetrics } from '../src/metrics/runtime.js';
import type { WorkerMetricsSnapshot } from '../src/metrics/media.js';
import { measurePerFrame, median } from './measure.js';

const FRAMES = 200_000;
const RUNS = 5;
const WORKERS = 2;
const SCRAPES = 200;

// The frame's instrumentation as the worker entry does it (src/workers/worker.ts).
const frame = new FixedHistogram(FRAME_SECONDS);
const span = new SpanTimer(frame, () => performance.now());
const observeOnly = measurePerFrame((i) => frame.observe(i * 1e-7), {
  warmup: 20_000,
  frames: FRAMES,
  runs: RUNS,
  heapWindow: 20_000,
});
const perFrame = measurePerFrame(
  () => {
    span.start();
    span.end();
  },
  { warmup: 20_000, frames: FRAMES, runs: RUNS, heapWindow: 20_000 },
);

// A worker's snapshot, as posted each second (built, not posted: structured clone is the port's cost).
const runtime = new RuntimeMetrics();
const first = new FixedHistogram(LATENCY_SECONDS);
const jitter = new FixedHistogram(JITTER_SECONDS);
const snapshot = (): WorkerMetricsSnapshot => ({
  runtime: runtime.snapshot(),
  frame: frame.snapshot(),
  firstAudio: first.snapshot(),
  rtpJitter: jitter.snapshot(),
  rtp: { received: 1, lost: 0, late: 0 },
  conversations: { direct: 10, 'telephony-inbound': 5 },
  calls: { 'telephony-inbound': 5 },
});
const snap = measurePerFrame(() => snapshot(), { warmup: 1000, frames: 20_000, runs: RUNS, heapWindow: 1000 });

// A scrape of main's registry with WORKERS workers' snapshots and some HTTP and SIP series.
const metrics = new NodeMetrics();
for (let w = 0; w < WORKERS; w++) metrics.workerSnapshot(w, snapshot());
for (const route of ['/v1/agents', '/v1/agents/:nameOrId', '/v1/conversations', '/v1/projects']) {
  metrics.httpRequests.observe({ method: 'GET', route, status: '200' }, 0.002);
}
for (const method of ['INVITE', 'ACK', 'BYE', 'OPTIONS']) metrics.sipRequests.inc({ direction: 'in', method });
const scrapeMs: number[] = [];
let bytes = 0;
for (let r = 0; r < RUNS; r++) {
  const t0 = performance.now();
  for (let i = 0; i < SCRAPES; i++) bytes = (await metrics.scrape()).body.length;
  scrapeMs.push((performance.now() - t0) / SCRAPES);
}

const result = {
  date: new Date().toISOString(),
  node: process.version,
  cpu: os.cpus()[0]?.model,
  loadavg: os.loadavg(),
  histogram_observe: { cpu_ns_median: median(observeOnly.runsNs), heap_bytes: observeOnly.bytesPerFrame },
  frame_instrumentation: { cpu_ns_median: median(perFrame.runsNs), heap_bytes_per_frame: perFrame.bytesPerFrame },
  worker_snapshot: { cpu_ns_median: median(snap.runsNs), heap_bytes: snap.bytesPerFrame },
  scrape: { workers: WORKERS, ms_median: median(scrapeMs), bytes },
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/metrics.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
