// A histogram with fixed buckets, for the paths that must not allocate (a media frame, a timer's lateness): observe()
// increments a preallocated array; snapshot() copies it out (Prometheus semantics: cumulative since start, the
// scrape side turns the per-bucket counts into `le` counts).

/** What crosses threads (structured clone): per-bucket counts (the last is past the largest bound), sum, count. */
export interface HistogramSnapshot {
  counts: number[];
  sum: number;
  count: number;
}

export class FixedHistogram {
  /** Per-bucket counts, then the sum and the count: one typed array, so observe() boxes no number. */
  private readonly cells: Float64Array;
  private readonly sumAt: number;

  /** `bounds`: ascending upper bounds (inclusive, Prometheus `le`), in the unit observed. */
  constructor(readonly bounds: readonly number[]) {
    for (let i = 1; i < bounds.length; i++) {
      if (!(bounds[i] > bounds[i - 1])) throw new RangeError('histogram bounds must ascend');
    }
    this.sumAt = bounds.length + 1;
    this.cells = new Float64Array(bounds.length + 3);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    const cells = this.cells;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    cells[i]++;
    cells[this.sumAt] += value;
    cells[this.sumAt + 1]++;
  }

  snapshot(): HistogramSnapshot {
    const cells = this.cells;
    return { counts: Array.from(cells.subarray(0, this.sumAt)), sum: cells[this.sumAt], count: cells[this.sumAt + 1] };
  }
}

/**
 * Times one span without boxing a number per call (a module-level `let` holding performance.now() would allocate a
 * heap number each time): start(), then end() observes the seconds since into `histogram`.
 */
export class SpanTimer {
  private readonly startedAt = new Float64Array(1);

  constructor(
    private readonly histogram: FixedHistogram,
    private readonly now: () => number,
  ) {}

  start(): void {
    this.startedAt[0] = this.now();
  }

  end(): void {
    this.histogram.observe((this.now() - this.startedAt[0]) / 1000);
  }
}

/** Seconds, for work inside one 20 ms media frame. */
export const FRAME_SECONDS = [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1] as const;
/** Seconds, for event-loop delay and GC pauses. */
export const PAUSE_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1] as const;
/** Seconds, for a conversational latency (a turn's first audio). */
export const LATENCY_SECONDS = [0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10] as const;
/** Seconds, for RTP interarrival jitter (RFC 3550 A.8). */
export const JITTER_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16] as const;
/** Seconds, for a control-plane request. */
export const REQUEST_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10] as const;
