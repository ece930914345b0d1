// Timer values the dialog layer uses, all derived from T1/T2 (RFC 3261 17.1.1.1, 13.3.1.4).

export interface TimerConfig {
  /** RFC 3261 17.1.1.1: RTT estimate, default 500 ms. */
  t1Ms: number;
  /** RFC 3261 17.1.2.2: maximum retransmit interval for non-INVITE requests and INVITE responses, 4 s. */
  t2Ms: number;
}

export const DEFAULT_TIMERS: TimerConfig = { t1Ms: 500, t2Ms: 4000 };

/** RFC 3261 13.3.1.4: the UAS gives up waiting for the ACK of its 2xx after 64*T1. */
export function ackWaitMs(t: TimerConfig): number {
  return 64 * t.t1Ms;
}

/** A clock the UA injects: real timers in production, a manual clock in tests. */
export interface Clock {
  now(): number;
  setTimer(ms: number, fn: () => void): TimerHandle;
}

export interface TimerHandle {
  cancel(): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const h = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(h) };
  },
};

/** A clock for tests: time moves only when `advance` is called. */
export class ManualClock implements Clock {
  #now = 0;
  #timers: Array<{ at: number; fn: () => void; live: boolean }> = [];

  now(): number {
    return this.#now;
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const t = { at: this.#now + ms, fn, live: true };
    this.#timers.push(t);
    return { cancel: () => { t.live = false; } };
  }

  /** Move time forward, firing due timers in order (timers they set fire too if due). */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.live && t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.#now = due.at;
      due.live = false;
      due.fn();
    }
    this.#timers = this.#timers.filter((t) => t.live);
    this.#now = end;
  }

  get pending(): number {
    return this.#timers.filter((t) => t.live).length;
  }
}
