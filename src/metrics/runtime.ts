// A thread's own runtime health, measured the same way on main and in each media worker: event-loop delay (how late
// a short repeating timer fires: what a pacing tick or a SIP retransmission would suffer) and GC pauses by kind.
import { constants, performance, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { FixedHistogram, PAUSE_SECONDS, type HistogramSnapshot } from './histogram.js';

/** How often the event-loop sampler wakes; its lateness past this is the delay observed. */
export const EVENT_LOOP_SAMPLE_MS = 20;

export const GC_KINDS = ['minor', 'major', 'incremental', 'weakcb'] as const;
export type GcKind = (typeof GC_KINDS)[number];

/** perf_hooks' GC kind flags (Node docs, "PerformanceEntry.detail", gc) to our label. */
const GC_KIND_OF: ReadonlyMap<number, GcKind> = new Map([
  [constants.NODE_PERFORMANCE_GC_MINOR, 'minor'],
  [constants.NODE_PERFORMANCE_GC_MAJOR, 'major'],
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'],
  [constants.NODE_PERFORMANCE_GC_WEAKCB, 'weakcb'],
]);

export interface RuntimeSnapshot {
  eventLoopDelay: HistogramSnapshot;
  gc: Record<GcKind, HistogramSnapshot>;
}

export class RuntimeMetrics {
  readonly eventLoopDelay = new FixedHistogram(PAUSE_SECONDS);
  readonly gc: Record<GcKind, FixedHistogram> = {
    minor: new FixedHistogram(PAUSE_SECONDS),
    major: new FixedHistogram(PAUSE_SECONDS),
    incremental: new FixedHistogram(PAUSE_SECONDS),
    weakcb: new FixedHistogram(PAUSE_SECONDS),
  };
  private timer: NodeJS.Timeout | null = null;
  private observer: PerformanceObserver | null = null;
  private last = 0;

  /** Starts sampling; the timer does not keep the thread alive. */
  start(): void {
    if (this.timer) return;
    this.last = performance.now();
    this.timer = setInterval(this.sample, EVENT_LOOP_SAMPLE_MS);
    this.timer.unref();
    this.observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) this.gcEntry(entry);
    });
    this.observer.observe({ entryTypes: ['gc'] });
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.observer?.disconnect();
    this.observer = null;
  }

  snapshot(): RuntimeSnapshot {
    return {
      eventLoopDelay: this.eventLoopDelay.snapshot(),
      gc: {
        minor: this.gc.minor.snapshot(),
        major: this.gc.major.snapshot(),
        incremental: this.gc.incremental.snapshot(),
        weakcb: this.gc.weakcb.snapshot(),
      },
    };
  }

  private readonly sample = (): void => {
    const now = performance.now();
    const late = now - this.last - EVENT_LOOP_SAMPLE_MS;
    this.last = now;
    this.eventLoopDelay.observe(late > 0 ? late / 1000 : 0);
  };

  private gcEntry(entry: PerformanceEntry): void {
    const kind = GC_KIND_OF.get((entry as { detail?: { kind?: number } }).detail?.kind ?? -1);
    if (kind) this.gc[kind].observe(entry.duration / 1000);
  }
}
