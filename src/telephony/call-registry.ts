// The calls this node holds, by Parley's call id, and the ones each media worker runs (a worker that dies takes
// exactly these with it).
import type { SipCall } from './sip-call.js';

export class CallRegistry {
  readonly #calls = new Map<string, SipCall>();

  add(call: SipCall): void {
    if (this.#calls.has(call.callId)) throw new Error(`call ${call.callId} is already registered`);
    this.#calls.set(call.callId, call);
  }

  get(callId: string): SipCall | undefined {
    return this.#calls.get(callId);
  }

  delete(call: SipCall): void {
    if (this.#calls.get(call.callId) === call) this.#calls.delete(call.callId);
  }

  /** The calls a worker was given. */
  ofWorker(workerId: number): SipCall[] {
    return [...this.#calls.values()].filter((c) => c.workerId === workerId);
  }

  all(): SipCall[] {
    return [...this.#calls.values()];
  }

  get size(): number {
    return this.#calls.size;
  }
}
