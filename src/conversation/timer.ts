// A one-shot timer owned by one object: `start` (re)arms it, `cancel` clears it; a disabled timer is a no-op, so
// call sites need no null checks. Time comes from the conversation's injected timers (tests need no sleeping).
import type { ConversationTimers } from './host.js';

export interface OwnedTimer {
  /** Arms (or re-arms) the timer to fire after its delay. */
  start(): void;
  cancel(): void;
  readonly armed: boolean;
}

/** delayMs null or <= 0: the timer is disabled. */
export function ownedTimer(timers: ConversationTimers, delayMs: number | null, fire: () => void): OwnedTimer {
  let handle: unknown;
  let armed = false;
  const enabled = delayMs !== null && delayMs > 0;
  return {
    start() {
      if (!enabled) return;
      if (armed) timers.clear(handle);
      armed = true;
      handle = timers.set(() => {
        armed = false;
        fire();
      }, delayMs);
    },
    cancel() {
      if (!armed) return;
      armed = false;
      timers.clear(handle);
    },
    get armed() {
      return armed;
    },
  };
}

/**
 * Like ownedTimer, for a timer re-armed far more often than it fires (the idle timeout, re-armed by every 20 ms
 * audio frame): `start` only moves the deadline; the one pending timer, when it fires before the deadline,
 * waits out the rest. Fires `delayMs` after the last `start`, as ownedTimer does, without a clear and a set per call.
 * A class, not closures: every conversation's `start` is then the one prototype method, so the per-frame call site
 * stays monomorphic and inlined (with closures it would call one of N functions).
 */
class SlidingTimer implements OwnedTimer {
  private handle: unknown;
  private pending = false;
  private isArmed = false;
  private deadline = 0;
  private readonly onTimer = (): void => {
    this.pending = false;
    if (!this.isArmed) return;
    const left = this.deadline - this.timers.now();
    if (left > 0) {
      this.pending = true;
      this.handle = this.timers.set(this.onTimer, left);
      return;
    }
    this.isArmed = false;
    this.fire();
  };

  constructor(
    private readonly timers: ConversationTimers,
    /** 0: disabled. */
    private readonly delayMs: number,
    private readonly fire: () => void,
  ) {}

  start(): void {
    if (this.delayMs === 0) return;
    this.isArmed = true;
    this.deadline = this.timers.now() + this.delayMs;
    if (this.pending) return;
    this.pending = true;
    this.handle = this.timers.set(this.onTimer, this.delayMs);
  }

  cancel(): void {
    this.isArmed = false;
    if (!this.pending) return;
    this.pending = false;
    this.timers.clear(this.handle);
  }

  get armed(): boolean {
    return this.isArmed;
  }
}

export function slidingTimer(timers: ConversationTimers, delayMs: number | null, fire: () => void): OwnedTimer {
  return new SlidingTimer(timers, delayMs !== null && delayMs > 0 ? delayMs : 0, fire);
}
