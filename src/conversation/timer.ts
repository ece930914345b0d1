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
 */
export function slidingTimer(timers: ConversationTimers, delayMs: number | null, fire: () => void): OwnedTimer {
  let handle: unknown;
  let pending = false;
  let armed = false;
  let deadline = 0;
  const enabled = delayMs !== null && delayMs > 0;
  const onTimer = () => {
    pending = false;
    if (!armed) return;
    const left = deadline - timers.now();
    if (left > 0) {
      pending = true;
      handle = timers.set(onTimer, left);
      return;
    }
    armed = false;
    fire();
  };
  return {
    start() {
      if (!enabled) return;
      armed = true;
      deadline = timers.now() + delayMs;
      if (pending) return;
      pending = true;
      handle = timers.set(onTimer, delayMs);
    },
    cancel() {
      armed = false;
      if (!pending) return;
      pending = false;
      timers.clear(handle);
    },
    get armed() {
      return armed;
    },
  };
}
