// One call as main holds it: its ids, the worker and RTP port it was given, its dialog once there is one, and its
// state (sip-call.fsm.ts). The waits on the worker's answers are owned here, each bounded by a timer it clears.
import type { Dialog } from '../../sip/index.js';
import type { Logger } from '../log.js';
import type { CallMedia, CallOrigin } from '../workers/worker-protocol.js';
import type { Trunk } from './trunks.js';
import { sipCallTransition, type SipCallInput, type SipCallState } from './sip-call.fsm.js';

/** The worker's answer to call_assigned; `refused`: it answered no (a bind failure), else none came in time. */
export type MediaReadyResult = { ok: true } | { ok: false; error: string; refused: boolean };

export interface SipCallInit {
  callId: string;
  conversationId: string;
  orgId: string;
  projectId: string;
  origin: CallOrigin;
  log: Logger;
  /** The trunk the call is on (its `inbound.allow_refer` lets the peer transfer the call); none: no REFER. */
  trunk?: Trunk | null;
  /** Parley's number on the call (the dialled number, or the caller ID it presented): the From of a transfer's leg. */
  localNumber?: string | null;
}

export class SipCall {
  readonly callId: string;
  readonly conversationId: string;
  readonly orgId: string;
  readonly projectId: string;
  readonly origin: CallOrigin;
  readonly log: Logger;
  readonly trunk: Trunk | null;
  localNumber: string | null;
  state: SipCallState = 'setting_up';
  workerId: number | null = null;
  rtpPort: number | null = null;
  /** The media the worker was assigned (its codec is the conversation's). */
  media: CallMedia | null = null;
  dialog: Dialog | null = null;
  /** When call_start was sent (the record's start). */
  startedAt: Date | null = null;
  /**
   * The transfer of this call under way, one at a time: the peer's REFER (refer-in.ts) or the agent's phone
   * transfer (transfer.ts). Each refuses to start while the other runs: both would move the call's media and dialog.
   */
  transferring: 'peer' | 'agent' | null = null;
  /** Resolves once the call is forgotten (its port, lease or record and dialog dealt with: done()). */
  readonly ended: Promise<void>;
  #resolveEnded!: () => void;
  #mediaWaiter: { resolve: (r: MediaReadyResult) => void; timer: NodeJS.Timeout } | null = null;
  #releaseWaiter: { resolve: (released: boolean) => void; timer: NodeJS.Timeout } | null = null;

  constructor(init: SipCallInit) {
    this.callId = init.callId;
    this.conversationId = init.conversationId;
    this.orgId = init.orgId;
    this.projectId = init.projectId;
    this.origin = init.origin;
    this.log = init.log;
    this.trunk = init.trunk ?? null;
    this.localNumber = init.localNumber ?? null;
    this.ended = new Promise((resolve) => (this.#resolveEnded = resolve));
  }

  /** Applies an input; false (nothing changes) when it does not apply in the current state. */
  step(input: SipCallInput): boolean {
    const next = sipCallTransition(this.state, input);
    if (next === null) return false;
    this.state = next;
    if (next === 'ended') this.#settleWaits();
    return true;
  }

  /** Everything the call held is released: `ended` resolves. */
  done(): void {
    this.#resolveEnded();
  }

  /** The worker's answer to the last call_assigned, or `{ok: false}` after `timeoutMs` or once the call ended. */
  untilMediaReady(timeoutMs: number): Promise<MediaReadyResult> {
    this.mediaReady({ ok: false, error: 'superseded by a new assignment', refused: false });
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#mediaWaiter = null;
        resolve({ ok: false, error: `no call_media_ready within ${timeoutMs} ms`, refused: false });
      }, timeoutMs);
      this.#mediaWaiter = { resolve, timer };
    });
  }

  mediaReady(result: MediaReadyResult): void {
    const w = this.#mediaWaiter;
    if (!w) return;
    this.#mediaWaiter = null;
    clearTimeout(w.timer);
    w.resolve(result);
  }

  /** Whether the worker released the call (call_ended after a hang-up) within `timeoutMs`. */
  untilWorkerReleased(timeoutMs: number): Promise<boolean> {
    this.#settleRelease(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#releaseWaiter = null;
        resolve(false);
      }, timeoutMs);
      this.#releaseWaiter = { resolve, timer };
    });
  }

  workerReleased(): void {
    this.#settleRelease(true);
  }

  #settleRelease(released: boolean): void {
    const w = this.#releaseWaiter;
    if (!w) return;
    this.#releaseWaiter = null;
    clearTimeout(w.timer);
    w.resolve(released);
  }

  #settleWaits(): void {
    this.mediaReady({ ok: false, error: 'the call ended', refused: false });
    this.#settleRelease(false);
  }
}
