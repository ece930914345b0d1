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
