// The per-worker pacing clock (docs/ARCHITECTURE.md, "Media pipeline"): one timer serves every outbound stream
// of a worker. Frames are scheduled by deadline against an injected now() (performance.now by default), not by
// setInterval, which drifts. After a stall the clock runs a bounded number of overdue frames
// and then re-anchors its schedule, so peers never receive a burst; streams count their own frames, so RTP
// timestamps stay continuous (one frame of media time per frame sent) across stalls.
import { performance } from 'node:perf_hooks';
import { FRAME_MS } from './format.js';

export interface PacedStream {
  /** One frame is due for this stream. `frame` counts the stream's frames from 0, one per call. */
  tick(frame: number): void;
}

export interface TimerApi {
  set(fn: () => void, delayMs: number): unknown;
  clear(handle: unknown): void;
}

export interface PacingClockOptions {
  frameMs?: number;
  now?: () => number;
  /** Overdue frames run at once after a stall before the schedule re-anchors (the rest is not sent). */
  maxCatchUpFrames?: number;
  timers?: TimerApi;
  /** Called once per clock frame before any stream's tick (e.g. start a native batch). */
  onFrameStart?: (frame: number) => void;
  /** Called once per clock frame after every stream's tick (e.g. run the batched native call, then send). */
  onFrameEnd?: (frame: number) => void;
}

export const PACING_DEFAULTS = {
  frameMs: FRAME_MS,
  /** Two extra frames: absorbs a GC pause or event-loop hiccup of up to 40 ms without audible gaps. */
  maxCatchUpFrames: 3,
} as const;

const nodeTimers: TimerApi = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as NodeJS.Timeout),
};

type ClockState = 'stopped' | 'running';
type ClockInput = 'first_stream' | 'last_stream' | 'stop';

export class PacingClock {
  private readonly frameMs: number;
  private readonly now: () => number;
  private readonly maxCatchUp: number;
  private readonly timers: TimerApi;
  private readonly onFrameStart?: (frame: number) => void;
  private readonly onFrameEnd?: (frame: number) => void;

  private state: ClockState = 'stopped';
  /**
   * The streams in registration order (null: removed during a frame, compacted after it) and each one's frame
   * count at the same index: two dense arrays read in order per frame, not an entry object per stream (one object
   * less to load per stream per frame).
   */
  private readonly streams: (PacedStream | null)[] = [];
  private readonly frameCounts: number[] = [];
  private readonly registered = new Set<PacedStream>();
  private timer: unknown = undefined;
  private nextDeadline = 0;
  private running = false;
  private pendingRemoval = false;

  /** Clock frames run since creation, frames skipped by stalls, and the largest lateness seen (ms). */
  readonly stats = { frames: 0, skipped: 0, stalls: 0, maxLateMs: 0 };

  constructor(opts: PacingClockOptions = {}) {
    this.frameMs = opts.frameMs ?? PACING_DEFAULTS.frameMs;
    this.now = opts.now ?? (() => performance.now());
    this.maxCatchUp = opts.maxCatchUpFrames ?? PACING_DEFAULTS.maxCatchUpFrames;
    if (!(this.maxCatchUp >= 1)) throw new RangeError('maxCatchUpFrames must be at least 1');
    this.timers = opts.timers ?? nodeTimers;
    this.onFrameStart = opts.onFrameStart;
    this.onFrameEnd = opts.onFrameEnd;
  }

  get streamCount(): number {
    return this.registered.size;
  }

  get isRunning(): boolean {
    return this.state === 'running';
  }

  /** Adds a stream; its first frame is due on the clock's next frame. The clock starts with its first stream. */
  register(stream: PacedStream): void {
    if (this.registered.has(stream)) throw new Error('stream already registered on this pacing clock');
    this.streams.push(stream);
    this.frameCounts.push(0);
    this.registered.add(stream);
    if (this.registered.size === 1) this.transition('first_stream');
  }

  /** Removes a stream (safe from inside its own tick). The clock stops with its last stream. */
  unregister(stream: PacedStream): void {
    if (!this.registered.delete(stream)) return;
    this.streams[this.streams.indexOf(stream)] = null;
    if (this.running) this.pendingRemoval = true;
    else this.compact();
    if (this.registered.size === 0) this.transition('last_stream');
  }

  /** Stops the timer and forgets every stream (worker shutdown). */
  stop(): void {
    this.streams.fill(null);
    this.registered.clear();
    if (!this.running) this.compact();
    else this.pendingRemoval = true;
    this.transition('stop');
  }

  private transition(input: ClockInput): void {
    switch (this.state) {
      case 'stopped':
        if (input === 'first_stream') {
          this.state = 'running';
          this.nextDeadline = this.now() + this.frameMs;
          this.arm();
        }
        return;
      case 'running':
        if (input === 'last_stream' || input === 'stop') {
          this.state = 'stopped';
          if (this.timer !== undefined) this.timers.clear(this.timer);
          this.timer = undefined;
        }
        return;
    }
  }

  private arm(): void {
    const delay = Math.max(0, this.nextDeadline - this.now());
    this.timer = this.timers.set(this.onTimer, delay);
  }

  private readonly onTimer = (): void => {
    this.timer = undefined;
    if (this.state !== 'running') return;
    this.runDue();
    if (this.state === 'running') this.arm();
  };

  /**
   * Runs every frame due at now(): normally one; after a stall at most maxCatchUpFrames, the rest skipped and
   * the schedule re-anchored one frame after now. Returns the number of frames run. The timer calls it;
   * tests may call it directly.
   */
  runDue(): number {
    const now = this.now();
    if (now < this.nextDeadline) return 0;
    const late = now - this.nextDeadline;
    if (late > this.stats.maxLateMs) this.stats.maxLateMs = late;
    const due = Math.floor(late / this.frameMs) + 1;
    const run = due > this.maxCatchUp ? this.maxCatchUp : due;
    if (due > this.maxCatchUp) {
      this.stats.stalls++;
      this.stats.skipped += due - run;
      // Re-anchor: the next frame is one period from now, keeping no debt.
      this.nextDeadline = now + this.frameMs;
    } else {
      this.nextDeadline += due * this.frameMs;
    }
    for (let i = 0; i < run; i++) this.runFrame();
    return run;
  }

  private runFrame(): void {
    const frame = this.stats.frames++;
    this.running = true;
    try {
      this.onFrameStart?.(frame);
      const streams = this.streams;
      const frameCounts = this.frameCounts;
      for (let i = 0; i < streams.length; i++) {
        const stream = streams[i];
        if (stream === null) continue;
        stream.tick(frameCounts[i]++);
      }
      this.onFrameEnd?.(frame);
    } finally {
      this.running = false;
      if (this.pendingRemoval) this.compact();
    }
  }

  private compact(): void {
    this.pendingRemoval = false;
    const streams = this.streams;
    const frameCounts = this.frameCounts;
    let w = 0;
    for (let r = 0; r < streams.length; r++) {
      if (streams[r] === null) continue;
      streams[w] = streams[r];
      frameCounts[w++] = frameCounts[r];
    }
    streams.length = w;
    frameCounts.length = w;
  }
}
