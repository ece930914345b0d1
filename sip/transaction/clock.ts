// The clock every transaction timer runs on, injected so tests drive a whole transaction without sleeping.
export interface TimerHandle {
  readonly id: number;
}

export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The real clock (performance.now and Node timers, unref'd so pending SIP timers never hold the process). */
export function systemClock(): Clock {
  let nextId = 1;
  const live = new Map<number, NodeJS.Timeout>();
  return {
    now: () => performance.now(),
    setTimeout(fn, ms) {
      const id = nextId++;
      const t = setTimeout(() => {
        live.delete(id);
        fn();
      }, ms);
      t.unref();
      live.set(id, t);
      return { id };
    },
    clearTimeout(handle) {
      const t = live.get(handle.id);
      if (t !== undefined) {
        clearTimeout(t);
        live.delete(handle.id);
      }
    },
  };
}

interface Pending {
  id: number;
  at: number;
  seq: number;
  fn: () => void;
}

/** A manual clock for tests: time moves only through advance(); timers fire in deadline order. */
export class ManualClock implements Clock {
  private time = 0;
  private seq = 0;
  private nextId = 1;
  private pending: Pending[] = [];

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.pending.push({ id, at: this.time + Math.max(0, ms), seq: this.seq++, fn });
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    this.pending = this.pending.filter((p) => p.id !== handle.id);
  }

  /** Number of timers waiting. */
  get pendingCount(): number {
    return this.pending.length;
  }

  /** Deadline of the next timer, or undefined. */
  nextDeadline(): number | undefined {
    let best: number | undefined;
    for (const p of this.pending) if (best === undefined || p.at < best) best = p.at;
    return best;
  }

  /** Move time forward by ms, firing every timer due on the way (including ones those timers set). */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      let next: Pending | undefined;
      for (const p of this.pending)
        if (p.at <= end && (!next || p.at < next.at || (p.at === next.at && p.seq < next.seq))) next = p;
      if (!next) break;
      this.pending = this.pending.filter((p) => p !== next);
      this.time = next.at;
      next.fn();
    }
    this.time = end;
  }

  /** Advance to the next timer's deadline and fire it (and any due at the same instant). */
  runNext(): boolean {
    const at = this.nextDeadline();
    if (at === undefined) return false;
    this.advance(at - this.time);
    return true;
  }
}
