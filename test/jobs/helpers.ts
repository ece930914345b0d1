// Helpers of the job tests: a settable clock, waiting for a condition the database will reach, a quiet logger.
import { createLogger } from '../../src/log.js';

export const quiet = createLogger('silent');

/** A clock the test moves by hand. */
export function manualClock(start = new Date('2026-11-27T12:00:00.000Z')) {
  let t = start.getTime();
  return {
    now: () => new Date(t),
    advance(ms: number) {
      t += ms;
    },
    set(d: Date) {
      t = d.getTime();
    },
  };
}

const POLL_MS = 25;
const POLLS = 2400;

/** Resolves once `test` answers true (polled); rejects naming `what` when it never does. */
export async function eventually(what: string, test: () => Promise<boolean> | boolean): Promise<void> {
  for (let i = 0; i < POLLS; i++) {
    if (await test()) return;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new Error(`never happened: ${what}`);
}

/** A promise and its resolver. */
export function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
