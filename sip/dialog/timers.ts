// Timers of the dialog layer on the transaction layer's injected clock, derived from T1/T2
// (RFC 3261 13.3.1.4), plus a `{ cancel }` handle so call sites need no null checks.

import { systemClock as transactionSystemClock, type Clock } from '../transaction/clock.js';
import { DEFAULT_TIMERS as TRANSACTION_TIMERS, type TimerValues } from '../transaction/timers.js';

export type { Clock, TimerValues };
export { ManualClock } from '../transaction/clock.js';

export const DEFAULT_TIMERS: TimerValues = TRANSACTION_TIMERS;

/** RFC 3261 13.3.1.4: the UAS gives up waiting for the ACK of its 2xx after 64*T1. */
export function ackWaitMs(t: TimerValues): number {
  return 64 * t.T1;
}

export interface TimerHandle {
  cancel(): void;
}

/** Start a timer on the clock; cancel() is safe to call twice and after it fired. */
export function setTimer(clock: Clock, ms: number, fn: () => void): TimerHandle {
  const h = clock.setTimeout(fn, ms);
  return { cancel: () => clock.clearTimeout(h) };
}

export function systemClock(): Clock {
  return transactionSystemClock();
}
