// main's side of every call's link to its media worker (docs/ARCHITECTURE.md, "Worker protocol", telephony): it
// gives a call an RTP port pair and a worker (call_assigned, then call_media_ready), starts it, relays the dialog's
// events (call_hangup, call_media_update, call_dtmf), and releases what the call held when the worker reports it
// ended (call_ended): BYE while the dialog is up, the port pair, the lease of a conversation that never started. A
// worker that dies takes its calls with it: main sends their BYEs and finishes their records itself.
import type { Dialog, EndReason, InfoEvent, NegotiatedMedia } from '../../sip/index.js';
import type { Logger } from '../log.js';
import type { Sql } from '../store/db.js';
import { finishLostCall, releaseCall } from '../domain/calls.js';
import type {
  CallHangupReason,
  CallMedia,
  CallMessage,
  CallNotice,
  MediaAddress,
  TransferEvent,
} from '../workers/worker-protocol.js';
import { callMediaOf, remoteMediaOf } from './media-policy.js';
import type { MediaWorkers } from './media-workers.js';
import type { RtpPorts } from './rtp-ports.js';
import { CallRegistry } from './call-registry.js';
import { DtmfInfoSender } from './dtmf-info.js';
import { SipCall, type SipCallInit } from './sip-call.js';
import { serviceUnavailable } from './sip-errors.js';

export const CALL_CONTROL_DEFAULTS = {
  /** How long a worker has to bind a call's ports and answer call_assigned. */
  media_ready_timeout_ms: 5_000,
  /** Ports tried per call when a worker cannot bind one (TELEPHONY: "main tries another port once"). */
  media_attempts: 2,
  /** Seconds a caller refused for want of a port or worker is asked to wait (Retry-After). */
  retry_after_sec: 5,
  /** How long BYEs still under way at shutdown may take. */
  bye_grace_ms: 2_000,
} as const;

/** What call_assigned carries besides the ids and the port, which CallControl fills in. */
export type CallAssignment = Omit<
  Extract<CallMessage, { type: 'call_assigned' }>,
  'type' | 'callId' | 'conversationId' | 'rtpPort' | 'origin'
>;

export interface CallControlOptions {
  workers: MediaWorkers;
  ports: RtpPorts;
  sql: Sql;
  log: Logger;
  now?: () => Date;
  mediaReadyTimeoutMs?: number;
}

/** RFC 4733 has 16 DTMF events; SIP INFO carries them as these characters (`application/dtmf`: the digits themselves). */
const DTMF_DIGITS = /^[0-9*#A-Da-d]+$/;
const DTMF_CONTENT_TYPE = 'application/dtmf';

/** The digits a SIP INFO carries (application/dtmf-relay parsed by sip/, application/dtmf's body), or null. */
export function dtmfDigitsOf(info: InfoEvent): string | null {
  if (info.dtmf) return info.dtmf.digit;
  if (info.contentType !== DTMF_CONTENT_TYPE) return null;
  const text = info.body.toString('utf8').trim();
  return DTMF_DIGITS.test(text) ? text.toUpperCase() : null;
}

export class CallControl {
  readonly calls = new CallRegistry();
  readonly #workers: MediaWorkers;
  readonly #ports: RtpPorts;
  readonly #sql: Sql;
  readonly #log: Logger;
  readonly #now: () => Date;
  readonly #mediaReadyTimeoutMs: number;
  /** BYEs under way (shutdown waits for them before SIP closes). */
  readonly #byes = new Set<Promise<void>>();
  /** Where a call's call_transfer notices go (transfer.ts); none: they are logged and dropped. */
  transferListener: ((call: SipCall, event: TransferEvent) => void) | null = null;
  /** Keys of calls without telephone-event, sent as SIP INFO. */
  readonly #dtmfOut = new DtmfInfoSender();
  /** Undoes attachDialog's listeners on the call's current dialog. */
  readonly #detach = new WeakMap<SipCall, () => void>();
  /** Joins each attached dialog to the handling of the peer's REFERs (refer-in.ts); null: REFER is declined (603). */
  referHandler: ((call: SipCall, dialog: Dialog) => void) | null = null;

  constructor(opts: CallControlOptions) {
    this.#workers = opts.workers;
    this.#ports = opts.ports;
    this.#sql = opts.sql;
    this.#log = opts.log;
    this.#now = opts.now ?? (() => new Date());
    this.#mediaReadyTimeoutMs = opts.mediaReadyTimeoutMs ?? CALL_CONTROL_DEFAULTS.media_ready_timeout_ms;
  }

  /** A new call, registered (its conversation id is admitted already). */
  open(init: Omit<SipCallInit, 'log'>): SipCall {
    const call = new SipCall({
      ...init,
      log: this.#log.child({ callId: init.callId, conversationId: init.conversationId }),
    });
    this.calls.add(call);
    return call;
  }

  /**
   * Gives the call a port pair (the one it holds when `keepPort`, else a new one) and the least loaded worker, sends
   * call_assigned and waits for call_media_ready; a refused bind is retried once on another port. Resolves with the
   * RTP port. Throws CallRefused 503 once the call is abandoned (its port and lease released) or ended meanwhile.
   */
  async assign(call: SipCall, assignment: CallAssignment, opts: { keepPort?: boolean } = {}): Promise<number> {
    const attempts = opts.keepPort ? 1 : CALL_CONTROL_DEFAULTS.media_attempts;
    let why = '';
    for (let attempt = 0; attempt < attempts; attempt++) {
      const port = opts.keepPort && call.rtpPort !== null ? call.rtpPort : this.#ports.allocate();
      if (port === null) {
        await this.abandon(call);
        throw serviceUnavailable('every RTP port pair is in use', CALL_CONTROL_DEFAULTS.retry_after_sec);
      }
      call.rtpPort = port;
      const workerId = call.workerId ?? this.#workers.leastLoaded();
      if (workerId === null) {
        await this.abandon(call);
        throw serviceUnavailable('no media worker is running', CALL_CONTROL_DEFAULTS.retry_after_sec);
      }
      call.workerId = workerId;
      call.media = assignment.media;
      const ready = call.untilMediaReady(this.#mediaReadyTimeoutMs);
      this.#workers.send(workerId, {
        type: 'call_assigned',
        callId: call.callId,
        conversationId: call.conversationId,
        rtpPort: port,
        origin: call.origin,
        ...assignment,
      });
      const r = await ready;
      if (r.ok) {
        if (call.step('media_ready')) return port;
        throw serviceUnavailable('the call ended while its media worker bound its ports');
      }
      if (call.state === 'ended') throw serviceUnavailable(`the call ended while its media was set up: ${r.error}`);
      why = r.error;
      call.log.warn({ workerId, rtpPort: port, error: r.error }, 'media worker did not take the call');
      if (!r.refused) {
        // No answer: the worker may still take it; tell it the call is off.
        this.#workers.send(workerId, { type: 'call_hangup', callId: call.callId, reason: 'failed' });
        break;
      }
      if (!opts.keepPort) {
        this.#ports.release(port);
        call.rtpPort = null;
      }
    }
    await this.abandon(call);
    throw serviceUnavailable(`the call's media could not be set up: ${why}`, CALL_CONTROL_DEFAULTS.retry_after_sec);
  }

  /** A call no worker holds is given up: its port and lease released, forgotten. */
  async abandon(call: SipCall): Promise<void> {
    if (!call.step('abandon')) return;
    await this.#release(call, { recordExists: false });
  }

  /** call_start: the call is answered, its conversation starts. */
  start(call: SipCall): void {
    if (!call.step('start')) return;
    call.startedAt = this.#now();
    this.#send(call, { type: 'call_start', callId: call.callId });
  }

  /** call_hangup to the worker holding the call; it answers call_ended, which releases the rest. */
  hangup(call: SipCall, reason: CallHangupReason): void {
    if (!call.step('hangup')) return;
    call.log.debug({ reason }, 'call hung up');
    this.#send(call, { type: 'call_hangup', callId: call.callId, reason });
  }

  /**
   * Moves a held (not started) call to a new assignment on its port, e.g. the codec an outbound call's answer chose:
   * the worker releases it (call_hangup failed, then call_ended) and is assigned it again. Throws CallRefused 503
   * when that fails (the call is then abandoned).
   */
  async reassign(call: SipCall, assignment: CallAssignment): Promise<void> {
    if (!call.step('reassign')) throw serviceUnavailable('the call ended before it could be reassigned');
    const released = call.untilWorkerReleased(this.#mediaReadyTimeoutMs);
    this.#send(call, { type: 'call_hangup', callId: call.callId, reason: 'failed' });
    if (!(await released)) {
      if (call.state === 'reassigning') {
        call.step('worker_lost');
        await this.#release(call, { recordExists: false });
      }
      throw serviceUnavailable('the media worker did not release the call to reassign it');
    }
    await this.assign(call, assignment, { keepPort: true });
  }

  mediaUpdate(call: SipCall, remote: MediaAddress | null, media: CallMedia): void {
    if (call.state !== 'held' && call.state !== 'live') return;
    this.#send(call, { type: 'call_media_update', callId: call.callId, remote, media });
  }

  /** Joins the call's dialog: the peer's BYE, re-INVITE/UPDATE and INFO reach the worker. */
  attachDialog(call: SipCall, dialog: Dialog): void {
    call.dialog = dialog;
    const onEnded = ({ reason }: { reason: EndReason }) => {
      if (reason === 'bye_sent') return; // ours, after the worker ended the call
      // RFC 3261 15.1.2: the peer hung up; an unacknowledged answer or an expired session ends it in error.
      this.hangup(call, reason === 'bye_received' ? 'bye' : 'failed');
    };
    const onModified = ({ media }: { media: NegotiatedMedia | null }) => {
      if (media === null) {
        call.log.warn('a re-INVITE or answer left the call no usable audio stream; the media is kept as it was');
        return;
      }
      this.mediaUpdate(call, remoteMediaOf(media), callMediaOf(media));
    };
    const onInfo = (info: InfoEvent) => {
      const digits = dtmfDigitsOf(info);
      if (digits !== null && call.state === 'live')
        this.#send(call, { type: 'call_dtmf', callId: call.callId, digits });
    };
    dialog.on('ended', onEnded);
    dialog.on('modified', onModified);
    dialog.on('info', onInfo);
    dialog.on('error', (err) => call.log.warn({ err }, 'SIP dialog background request failed'));
    this.#detach.set(call, () => {
      dialog.off('ended', onEnded);
      dialog.off('modified', onModified);
      dialog.off('info', onInfo);
      dialog.removeAllListeners('refer');
      dialog.screenRefer = null;
    });
    this.referHandler?.(call, dialog);
  }

  /**
   * The call goes on over another dialog (a transfer the peer asked for by REFER, answered): the old dialog no
   * longer speaks for the call (its BYE ends nothing; the caller of this sends it), the new one does.
   */
  replaceDialog(call: SipCall, dialog: Dialog): void {
    this.#detach.get(call)?.();
    this.attachDialog(call, dialog);
  }

  /** A worker's telephony notice. */
  notice(workerId: number, notice: CallNotice): void {
    const call = this.calls.get(notice.callId);
    if (!call || call.workerId !== workerId) {
      this.#log.debug({ workerId, notice }, 'telephony notice for a call this node no longer holds');
      return;
    }
    if (notice.type === 'call_media_ready') {
      call.mediaReady(notice.ok ? { ok: true } : { ok: false, error: notice.error, refused: true });
      return;
    }
    if (notice.type === 'call_transfer') {
      if (this.transferListener) this.transferListener(call, notice.event);
      else call.log.warn({ event: notice.event.kind }, 'call_transfer with no transfers running');
      return;
    }
    if (notice.type === 'call_dtmf_out') {
      if (call.state === 'live') void this.#dtmfOut.send(call, notice.digits);
      return;
    }
    if (call.state === 'reassigning') {
      call.step('worker_ended');
      call.workerReleased();
      return;
    }
    if (!call.step('worker_ended')) return;
    call.log.debug({ endedBy: notice.endedBy, started: notice.started }, 'call ended by its media worker');
    void this.#release(call, { recordExists: notice.started });
  }

  /**
   * The worker died: each of its calls gets its BYE, a started one's record is finished (`ended_by: error`, lease
   * freed), one that never started has its lease released, and the ports are freed. Resolves when all are done.
   */
  async workerLost(workerId: number): Promise<void> {
    const calls = this.calls.ofWorker(workerId);
    await Promise.all(
      calls.map(async (call) => {
        const started = call.startedAt;
        if (!call.step('worker_lost')) return;
        call.log.error({ workerId }, "the call's media worker died: ending the call");
        await this.#release(call, { recordExists: started !== null, lost: true });
      }),
    );
  }

  /**
   * Shutdown: every held or live call is hung up (`shutdown`) and given `graceMs` for its worker to save it and
   * answer; the rest are let go (BYE sent, port freed). Resolves when the BYEs are answered (bounded).
   */
  async endAll(graceMs: number): Promise<void> {
    for (const call of this.calls.all()) this.hangup(call, 'shutdown');
    const all = Promise.all(this.calls.all().map((c) => c.ended));
    let timer: NodeJS.Timeout | undefined;
    const expired = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
    ]);
    clearTimeout(timer);
    if (expired) {
      const left = this.calls.all();
      this.#log.error(
        { calls: left.map((c) => c.callId) },
        'calls still ending at the end of the shutdown grace: let go',
      );
      for (const call of left) {
        call.step('worker_lost'); // let go as if its worker were gone: the worker's own shutdown saves the record
        this.#bye(call);
        this.#freePort(call);
        this.calls.delete(call);
        call.done();
      }
    }
    await this.settleByes(CALL_CONTROL_DEFAULTS.bye_grace_ms);
  }

  /** Waits (at most `ms`) for the BYEs under way. */
  async settleByes(ms: number): Promise<void> {
    if (this.#byes.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.#byes]), new Promise((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
  }

  /** A message to the worker holding the call (a transfer's commands). */
  sendToWorker(call: SipCall, msg: CallMessage): void {
    this.#send(call, msg);
  }

  #send(call: SipCall, msg: CallMessage): void {
    if (call.workerId !== null) this.#workers.send(call.workerId, msg);
  }

  /** RFC 3261 15.1.1: BYE while the dialog is up. */
  #bye(call: SipCall): void {
    const dialog = call.dialog;
    if (!dialog || dialog.state !== 'confirmed') return;
    const sent: Promise<void> = dialog
      .bye()
      .then(
        () => undefined,
        (err: Error) => call.log.warn({ err }, 'BYE failed'),
      )
      .finally(() => this.#byes.delete(sent));
    this.#byes.add(sent);
  }

  #freePort(call: SipCall): void {
    if (call.rtpPort !== null) this.#ports.release(call.rtpPort);
    call.rtpPort = null;
  }

  /** An ended call's resources: its dialog, port, and lease (or, for a worker that died, its record). */
  async #release(call: SipCall, opts: { recordExists: boolean; lost?: boolean }): Promise<void> {
    this.#bye(call);
    this.#freePort(call);
    this.calls.delete(call);
    try {
      if (opts.lost && opts.recordExists && call.startedAt) {
        await finishLostCall(this.#sql, call.conversationId, { startedAt: call.startedAt, endedAt: this.#now() });
      } else if (!opts.recordExists || opts.lost) {
        await releaseCall(this.#sql, call.conversationId);
      }
    } catch (err) {
      call.log.error({ err }, "releasing the call's conversation failed: its lease is held until this node stops");
    } finally {
      call.done();
    }
  }
}
