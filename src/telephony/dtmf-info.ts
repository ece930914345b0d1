// Keys sent as SIP INFO (docs/telephony.md, "Keys the agent presses"): the keypad tool on a call that negotiated no
// RFC 4733 telephone-event. One INFO per digit (RFC 6086, body application/dtmf-relay: `Signal=` and `Duration=`),
// each sent once the one before it is answered and its tone's time and a pause have passed, as a phone's keys would
// be pressed; the digits of later presses wait behind those under way. A call that ends stops its queue.
import { dtmfRelayBody } from '../../sip/index.js';
import type { SipCall } from './sip-call.js';

/** ms each digit's tone lasts (`Duration=`): the usual 160 ms of a carrier's DTMF. */
export const DTMF_INFO_DURATION_MS = 160;
/** ms between the end of one digit's tone and the next INFO (the pause between key presses). */
export const DTMF_INFO_GAP_MS = 100;

export interface DtmfInfoTimers {
  set(fn: () => void, delayMs: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: DtmfInfoTimers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** The INFO queue of each live call. */
export class DtmfInfoSender {
  readonly #queues = new WeakMap<SipCall, Promise<void>>();
  readonly #timers: DtmfInfoTimers;

  constructor(timers: DtmfInfoTimers = realTimers) {
    this.#timers = timers;
  }

  /** Queues `digits` (DTMF keys, checked by the worker) behind the call's earlier ones; resolves once sent or stopped. */
  send(call: SipCall, digits: string): Promise<void> {
    const before = this.#queues.get(call) ?? Promise.resolve();
    const next = before.then(() => this.#sendAll(call, digits));
    this.#queues.set(call, next);
    return next;
  }

  async #sendAll(call: SipCall, digits: string): Promise<void> {
    for (let i = 0; i < digits.length; i++) {
      // The call's dialog now (a transfer may have replaced it); none, or the call ended: the rest is dropped.
      const dialog = call.dialog;
      if (call.state !== 'live' || dialog === null || dialog.state !== 'confirmed') {
        call.log.info({ unsent: digits.slice(i) }, 'the call ended before its keys were sent as SIP INFO');
        return;
      }
      const digit = digits[i];
      try {
        const res = await dialog.info(dtmfRelayBody(digit, DTMF_INFO_DURATION_MS));
        if (res.status >= 300)
          call.log.warn({ digit, status: res.status, reason: res.reason }, 'the peer refused a key sent as SIP INFO');
      } catch (err) {
        call.log.warn({ err, digit }, 'sending a key as SIP INFO failed');
      }
      if (i < digits.length - 1) await this.#pause(DTMF_INFO_DURATION_MS + DTMF_INFO_GAP_MS, call);
    }
  }

  /** Waits `ms`, or less when the call ends meanwhile. */
  #pause(ms: number, call: SipCall): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.#timers.set(resolve, ms);
      void call.ended.then(() => {
        this.#timers.clear(timer);
        resolve();
      });
    });
  }
}
