// Every transaction timer, derived from T1, T2 and T4 in one place (RFC 3261 17, Table 4; RFC 6026 for L, M).
import type { Clock, TimerHandle } from './clock.js';

export interface TimerValues {
  /** RFC 3261 17.1.1.1: RTT estimate, default 500 ms. */
  T1: number;
  /** RFC 3261 17.1.2.2: maximum retransmit interval for non-INVITE requests and INVITE responses, 4 s. */
  T2: number;
  /** RFC 3261 17.1.2.2: maximum duration a message remains in the network, 5 s. */
  T4: number;
}

export const DEFAULT_TIMERS: TimerValues = { T1: 500, T2: 4000, T4: 5000 } as const satisfies TimerValues;

export type TimerName = 'A' | 'B' | 'D' | 'E' | 'F' | 'G' | 'H' | 'I' | 'J' | 'K' | 'L' | 'M';

/** RFC 3261 17.1.1.2: Timer D is at least 32 s for unreliable transports (0 for reliable). */
const TIMER_D_UNRELIABLE_MS = 32_000;

/**
 * Initial duration of a timer (RFC 3261 Table 4). `reliable` is whether the transport is (TCP): timers that
 * only absorb retransmissions (D, I, J, K) are 0 then, and A, E, G are never started.
 */
export function initialDuration(timer: TimerName, t: TimerValues, reliable: boolean): number {
  switch (timer) {
    case 'A':
      return t.T1; // 17.1.1.2: initially T1, doubles
    case 'B':
      return 64 * t.T1; // 17.1.1.2: 64*T1
    case 'D':
      return reliable ? 0 : Math.max(TIMER_D_UNRELIABLE_MS, 64 * t.T1); // 17.1.1.2: >32 s UDP, 0 reliable
    case 'E':
      return t.T1; // 17.1.2.2: initially T1, doubles up to T2
    case 'F':
      return 64 * t.T1; // 17.1.2.2: 64*T1
    case 'G':
      return t.T1; // 17.2.1: initially T1, doubles up to T2
    case 'H':
      return 64 * t.T1; // 17.2.1: 64*T1
    case 'I':
      return reliable ? 0 : t.T4; // 17.2.1: T4 UDP, 0 reliable
    case 'J':
      return reliable ? 0 : 64 * t.T1; // 17.2.2: 64*T1 UDP, 0 reliable
    case 'K':
      return reliable ? 0 : t.T4; // 17.1.2.2: T4 UDP, 0 reliable
    case 'L':
      return 64 * t.T1; // RFC 6026 8.7: 64*T1
    case 'M':
      return 64 * t.T1; // RFC 6026 8.4: 64*T1
  }
}

/**
 * The next retransmission interval after one fired: Timer A doubles without bound (17.1.1.2); E and G double
 * up to T2 (17.1.2.2, 17.2.1).
 */
export function backoff(timer: 'A' | 'E' | 'G', current: number, t: TimerValues): number {
  return timer === 'A' ? current * 2 : Math.min(current * 2, t.T2);
}

/** One transaction's named timers on an injected clock: start (restarting if running), cancel, cancel all. */
export class TimerSet<N extends string> {
  private readonly handles = new Map<N, TimerHandle>();

  constructor(
    private readonly clock: Clock,
    private readonly fire: (name: N) => void,
  ) {}

  start(name: N, ms: number): void {
    this.cancel(name);
    this.handles.set(
      name,
      this.clock.setTimeout(() => {
        this.handles.delete(name);
        this.fire(name);
      }, ms),
    );
  }

  cancel(name: N): void {
    const h = this.handles.get(name);
    if (h !== undefined) {
      this.clock.clearTimeout(h);
      this.handles.delete(name);
    }
  }

  cancelAll(): void {
    for (const h of this.handles.values()) this.clock.clearTimeout(h);
    this.handles.clear();
  }

  running(name: N): boolean {
    return this.handles.has(name);
  }
}
