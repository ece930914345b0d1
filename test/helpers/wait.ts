// Waiting in tests: poll a condition until it holds, bounded in time, and fail loudly saying what never happened.
import { setTimeout as sleep } from 'node:timers/promises';

export interface UntilOptions {
  /** What the test waits for, in words; a function is read at the timeout, so it can show the state then. */
  what: string | (() => string);
  /** Give up after this long (default DEFAULT_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Pause between two checks (default DEFAULT_INTERVAL_MS; 0 waits one timer turn). */
  intervalMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_INTERVAL_MS = 10;

/** Thrown when a condition did not hold within its time. */
export class WaitTimeoutError extends Error {
  constructor(what: string, timeoutMs: number) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}`);
    this.name = 'WaitTimeoutError';
  }
}

/**
 * Resolves once `condition` returns true (checked at once, then every `intervalMs`); rejects with a
 * WaitTimeoutError naming `what` when it has not within `timeoutMs`. An error the condition throws ends the wait
 * with that error (a peer that exited, say).
 */
export async function until(condition: () => boolean | Promise<boolean>, opts: UntilOptions): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const intervalMs = opts.intervalMs ?? DEFAULT_INTERVAL_MS;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (performance.now() >= deadline) {
      throw new WaitTimeoutError(typeof opts.what === 'function' ? opts.what() : opts.what, timeoutMs);
    }
    await sleep(intervalMs);
  }
}
