// main's side of phone transfers (docs/telephony.md, "Transfers"): a media worker asks to transfer a call (the
// agent's built_in_transfer_to_phone_number, call_transfer request) and main hands the call over:
// - cold (keep_listening false, no digits), where the call's trunk allows it (inbound.allow_refer): SIP REFER on the
//   call's dialog (RFC 3515) to sip:<number>@<trunk host>, with Referred-By (RFC 3892), following the NOTIFYs'
//   message/sipfrag until a final status. A 2xx: the transfer is done; the worker ends the conversation and main
//   hangs up its leg (RFC 5589 6.1: the transferor ends the original call). A refused REFER, a failure NOTIFY, none in
//   time, or a trunk that allows no REFER: the transfer is bridged instead.
// - bridged: the worker binds a new leg's ports (open_leg), main INVITEs the number through the outbound trunk
//   (caller ID: the agent's number, or the caller's: use_agent_phone_number), offering the caller's codec first;
//   answered, the worker relays between the legs (bridge). Not answered: the caller goes back to the agent, after up
//   to TRANSFER_DEFAULTS.max_attempts dials with on_transfer_no_answer keep_retrying.
// The new leg is hung up when the call ends, or when the worker closes it; its port pair is freed once the worker
// has closed it (leg_closed) or the call is over.
import {
  SipError,
  TransactionTimeoutError,
  TransportError,
  type Dialog,
  type NotifyEvent,
  type UserAgent,
} from '../../sip/index.js';
import { isSipUri } from '../../sip/message/index.js';
import type { AnsweredBy } from '../conversation/host.js';
import type { PhoneTransferRequest, PhoneTransferResult } from '../conversation/tools/phone-transfer.js';
import type { Logger } from '../log.js';
import type { CallMedia, TransferEvent } from '../workers/worker-protocol.js';
import type { CallControl } from './call-control.js';
import { LocateError, type Locator } from './locate.js';
import { callMediaOf, localMedia, remoteMediaOf } from './media-policy.js';
import { ANONYMOUS_FROM, dialThroughTrunk, hostPart, requestUriFor } from './trunk-dial.js';
import type { RtpPorts } from './rtp-ports.js';
import type { SipCall } from './sip-call.js';
import type { Trunk } from './trunks.js';

export const TRANSFER_DEFAULTS = {
  /** Dials of an unanswered target with on_transfer_no_answer keep_retrying, the first included. */
  max_attempts: 3,
  /** Pause between two dials of keep_retrying. */
  retry_pause_ms: 1_000,
  /** After the REFER's 202, how long past the ring timeout a final NOTIFY may take before the bridge takes over. */
  refer_notify_grace_ms: 5_000,
  /** How long the worker has to bind the new leg's ports. */
  leg_ready_timeout_ms: 5_000,
} as const;

/** RFC 3261 21.4.9 / 21.4.18 / 21.4.24 / 21.6.2: nobody took the call (a retry may find someone). */
const RETRY_STATUSES = new Set([408, 480, 486, 487, 600, 603]);
/** RFC 3515 2.4.5: the Event of a REFER's NOTIFYs. */
const REFER_EVENT = /^refer\b/i;

export interface CallTransfersOptions {
  ua: UserAgent;
  control: CallControl;
  ports: RtpPorts;
  /** The trunk with an outbound section (bridged transfers dial through it), if any. */
  outboundTrunk: Trunk | null;
  locator: Locator;
  /** The address put in SDP c= and in From and Referred-By. */
  address: string;
  /** PARLEY_RING_TIMEOUT_SEC in ms: how long each dial may ring. */
  ringTimeoutMs: number;
  log: Logger;
  /** Aborted when the node stops: dials under way are cancelled. */
  stopping: AbortSignal;
  maxAttempts?: number;
  retryPauseMs?: number;
}

/** One transfer as main runs it. */
interface Transfer {
  id: number;
  call: SipCall;
  request: PhoneTransferRequest;
  callerId: string | null;
  agentNumber: string | null;
  /** Aborted when the call ends: dials and waits stop. */
  abort: AbortController;
  legPort: number | null;
  legDialog: Dialog | null;
  legReady: ((r: { ok: true } | { ok: false; error: string }) => void) | null;
  /** detect_voicemail: waiting for the worker's leg_screened (null: the leg or the call ended first). */
  screened: ((answeredBy: AnsweredBy | null) => void) | null;
}

type Dialled = { dialog: Dialog } | { error: string; retry: boolean };

export class CallTransfers {
  readonly #o: CallTransfersOptions;
  readonly #byCall = new Map<string, Transfer>();

  constructor(opts: CallTransfersOptions) {
    this.#o = opts;
    opts.control.transferListener = (call, event) => this.event(call, event);
  }

  /** A worker's call_transfer event. */
  event(call: SipCall, event: TransferEvent): void {
    if (event.kind === 'request') {
      if (this.#byCall.has(call.callId) || call.transferring !== null) {
        const reason =
          call.transferring === 'peer' ? 'the other party is transferring the call' : 'another transfer is under way';
        call.log.warn({ reason }, 'a transfer request while another runs: refused');
        this.#send(call, event.transferId, {
          outcome: 'failed',
          phone_number: event.request.phoneNumber,
          reason,
          attempts: 0,
        });
        return;
      }
      const t: Transfer = {
        id: event.transferId,
        call,
        request: event.request,
        callerId: event.callerId,
        agentNumber: event.agentNumber,
        abort: new AbortController(),
        legPort: null,
        legDialog: null,
        legReady: null,
        screened: null,
      };
      this.#byCall.set(call.callId, t);
      call.transferring = 'agent';
      void call.ended.then(() => {
        t.abort.abort();
        t.screened?.(null);
        this.#closeLeg(t);
        this.#forget(t);
      });
      this.#run(t).catch((err: unknown) => {
        call.log.error({ err }, 'transfer failed');
        this.#finish(t, {
          outcome: 'failed',
          phone_number: t.request.phoneNumber,
          reason: (err as Error).message,
          attempts: 0,
        });
      });
      return;
    }
    const t = this.#byCall.get(call.callId);
    if (!t || t.id !== event.transferId) return;
    if (event.kind === 'leg_ready') {
      t.legReady?.(event.ok ? { ok: true } : { ok: false, error: event.error });
      t.legReady = null;
      return;
    }
    if (event.kind === 'leg_screened') {
      t.screened?.(event.answeredBy);
      return;
    }
    // leg_closed: the worker let the leg go; the transfer is over on its side.
    t.screened?.(null);
    this.#closeLeg(t);
    this.#forget(t);
  }

  async #run(t: Transfer): Promise<void> {
    const { request, call } = t;
    let referRefused: string | undefined;
    if (!request.keepListening && !request.dtmf) {
      referRefused = this.#referBlocked(call) ?? undefined;
      if (referRefused === undefined) {
        const outcome = await this.#refer(t);
        if (outcome === null) {
          this.#finish(t, { outcome: 'transferred', method: 'refer', phone_number: request.phoneNumber });
          return;
        }
        referRefused = outcome;
      }
      call.log.info({ reason: referRefused }, 'transfer: no REFER, bridging instead');
    }
    if (t.abort.signal.aborted) return;
    await this.#bridge(t, referRefused);
  }

  /** Why the call cannot be transferred by REFER, or null. */
  #referBlocked(call: SipCall): string | null {
    if (!call.trunk?.inbound?.allow_refer)
      return `trunk ${call.trunk?.name ?? '(none)'} does not allow REFER (inbound.allow_refer)`;
    if (call.dialog === null || call.dialog.state !== 'confirmed') return 'the call has no confirmed dialog';
    return null;
  }

  /** `sip:<number>@<host>`: the call's trunk's outbound host, else the host of the peer's Contact. */
  #referTo(call: SipCall, number: string): string {
    const outbound = call.trunk?.outbound;
    if (outbound) return requestUriFor(number, outbound);
    const target = call.dialog!.data.remoteTarget;
    if (isSipUri(target)) return `sip:${number}@${target.host}${target.port === undefined ? '' : `:${target.port}`}`;
    return `sip:${number}@${hostPart(this.#o.address)}`;
  }

  /** RFC 3515: REFER and its NOTIFYs until a final sipfrag. null when the transfer completed; else why not. */
  async #refer(t: Transfer): Promise<string | null> {
    const { call, request } = t;
    const dialog = call.dialog!;
    const referTo = this.#referTo(call, request.phoneNumber);
    // RFC 3892: the referrer is the agent, by its number on this call.
    const referredBy = `<sip:${t.agentNumber ?? 'parley'}@${hostPart(this.#o.address)}>`;
    let onNotify: ((e: NotifyEvent) => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const final = new Promise<string | null>((resolve) => {
      let last: number | null = null;
      onNotify = (e) => {
        if (e.event !== null && !REFER_EVENT.test(e.event)) return;
        const status = e.sipfrag?.status ?? null;
        if (status !== null) last = status;
        call.log.debug({ sipfrag: e.sipfrag, subscription: e.subscriptionState }, 'REFER progress');
        // RFC 3515 2.4.5: a final status (>= 200) ends the subscription.
        if (status !== null && status >= 200)
          resolve(status < 300 ? null : `the target answered ${status} ${e.sipfrag?.reason ?? ''}`.trim());
        else if (e.subscriptionState?.state === 'terminated')
          resolve(
            last !== null && last >= 200 && last < 300 ? null : 'the REFER subscription ended without a final status',
          );
      };
      dialog.on('notify', onNotify);
      onAbort = () => resolve('the call ended during the REFER');
      t.abort.signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const res = await dialog.refer(referTo, { referredBy });
      // RFC 3515 2.4.2: 202 Accepted; anything else refuses it (a 2xx other than 202 is taken as accepted too).
      if (res.status >= 300) return `REFER answered ${res.status} ${res.reason}`;
      call.log.info({ referTo, status: res.status }, 'REFER accepted');
      const timeout = new Promise<string>((resolve) => {
        timer = setTimeout(
          () => resolve('no final NOTIFY in time'),
          this.#o.ringTimeoutMs + TRANSFER_DEFAULTS.refer_notify_grace_ms,
        );
      });
      return await Promise.race([final, timeout]);
    } catch (err) {
      if (err instanceof SipError) return `REFER answered ${err.status} ${err.reason}`;
      if (err instanceof TransactionTimeoutError || err instanceof TransportError)
        return `REFER got no response: ${err.message}`;
      throw err;
    } finally {
      clearTimeout(timer);
      if (onNotify) dialog.off('notify', onNotify);
      if (onAbort) t.abort.signal.removeEventListener('abort', onAbort);
    }
  }

  async #bridge(t: Transfer, referRefused: string | undefined): Promise<void> {
    const { call, request } = t;
    const fail = (outcome: 'failed' | 'no_answer', reason: string, attempts: number) =>
      this.#finish(t, { outcome, phone_number: request.phoneNumber, reason, attempts });
    const outbound = this.#o.outboundTrunk?.outbound;
    if (!outbound)
      return fail('failed', `no outbound trunk to dial the transfer${referRefused ? `; ${referRefused}` : ''}`, 0);
    const callerCodec = call.media?.codec;
    if (callerCodec !== 'PCMU' && callerCodec !== 'PCMA')
      return fail('failed', `a bridged transfer needs G.711 on the call, not ${callerCodec}`, 0);
    const port = this.#o.ports.allocate();
    if (port === null) return fail('failed', 'every RTP port pair is in use', 0);
    t.legPort = port;
    const ready = await new Promise<{ ok: true } | { ok: false; error: string }>((resolve) => {
      const timer = setTimeout(
        () => resolve({ ok: false, error: 'the media worker did not open the leg in time' }),
        TRANSFER_DEFAULTS.leg_ready_timeout_ms,
      );
      t.legReady = (r) => {
        clearTimeout(timer);
        resolve(r);
      };
      this.#o.control.sendToWorker(call, {
        type: 'call_transfer',
        callId: call.callId,
        command: { kind: 'open_leg', transferId: t.id, rtpPort: port },
      });
    });
    if (!ready.ok) return fail('failed', `the new leg's media could not be set up: ${ready.error}`, 0);

    const maxAttempts =
      request.onNoAnswer === 'keep_retrying' ? (this.#o.maxAttempts ?? TRANSFER_DEFAULTS.max_attempts) : 1;
    let attempts = 0;
    let answeredBy: AnsweredBy | null = null;
    const noAnswer = (reason: string) =>
      this.#finish(t, {
        outcome: 'no_answer',
        phone_number: request.phoneNumber,
        reason,
        attempts,
        ...(answeredBy ? { answered_by: answeredBy } : {}),
      });
    // Each pass: dial until answered (or out of dials); a machine's answer (detect_voicemail) counts as none.
    for (;;) {
      let dialled: Dialled = { error: 'not dialled', retry: false };
      while (attempts < maxAttempts && !t.abort.signal.aborted) {
        if (attempts > 0) await sleep(this.#o.retryPauseMs ?? TRANSFER_DEFAULTS.retry_pause_ms, t.abort.signal);
        if (t.abort.signal.aborted) break;
        attempts++;
        dialled = await this.#dial(t, outbound, callerCodec, port);
        if ('dialog' in dialled || !dialled.retry) break;
        call.log.info({ attempt: attempts, of: maxAttempts, reason: dialled.error }, 'transfer target did not answer');
      }
      if (t.abort.signal.aborted) {
        if ('dialog' in dialled)
          dialled.dialog.bye().catch((err: Error) => call.log.warn({ err }, 'BYE of a transfer leg failed'));
        return;
      }
      if (!('dialog' in dialled)) {
        if (dialled.retry) return noAnswer(dialled.error);
        return fail('failed', dialled.error, attempts);
      }
      const dialog = dialled.dialog;
      t.legDialog = dialog;
      let media: CallMedia;
      try {
        if (dialog.media === null) throw new Error('the answer has no usable audio stream');
        media = callMediaOf(dialog.media);
      } catch (err) {
        // The worker closes the leg on this result; its leg_closed hangs the dialog up.
        return fail('failed', (err as Error).message, attempts);
      }
      dialog.on('ended', ({ reason }) => {
        // A leg already let go (a machine's, hung up here) is nobody's business.
        if (reason === 'bye_sent' || t.legDialog !== dialog) return;
        call.log.info({ reason }, 'transfer target hung up');
        this.#o.control.sendToWorker(call, {
          type: 'call_transfer',
          callId: call.callId,
          command: { kind: 'leg_hangup', transferId: t.id },
        });
      });
      dialog.on('error', (err) => call.log.warn({ err }, 'transfer leg dialog background request failed'));
      call.log.info(
        { to: request.phoneNumber, codec: media.codec, attempts, screening: request.detectVoicemail },
        'transfer target answered: bridging',
      );
      const screened = request.detectVoicemail
        ? new Promise<AnsweredBy | null>((resolve) => {
            t.screened = (r) => {
              t.screened = null;
              resolve(r);
            };
          })
        : null;
      this.#o.control.sendToWorker(call, {
        type: 'call_transfer',
        callId: call.callId,
        command: {
          kind: 'bridge',
          transferId: t.id,
          remote: remoteMediaOf(dialog.media),
          media,
          attempts,
          referRefused: referRefused ?? null,
        },
      });
      if (screened === null) return;
      // detect_voicemail: the worker bridges a person itself; a machine is hung up here and counts as no answer.
      const outcome = await screened;
      if (outcome === null || outcome.result !== 'machine') return;
      answeredBy = outcome;
      call.log.info(
        { attempt: attempts, of: maxAttempts, answeredBy },
        'transfer target is an answering machine: not answered',
      );
      t.legDialog = null;
      if (dialog.state === 'confirmed')
        dialog.bye().catch((err: Error) => call.log.warn({ err }, "BYE of an answering machine's transfer leg failed"));
      if (attempts >= maxAttempts) return noAnswer('answered by an answering machine');
    }
  }

  /** One INVITE of the target through the outbound trunk's servers, within the ring timeout. */
  async #dial(
    t: Transfer,
    outbound: NonNullable<Trunk['outbound']>,
    callerCodec: 'PCMU' | 'PCMA',
    port: number,
  ): Promise<Dialled> {
    const { ua, locator, address } = this.#o;
    const dialling = new AbortController();
    let timedOut = false;
    const stop = () => dialling.abort();
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, this.#o.ringTimeoutMs);
    t.abort.signal.addEventListener('abort', stop, { once: true });
    this.#o.stopping.addEventListener('abort', stop, { once: true });
    try {
      // The caller's codec first: the legs then relay without transcoding when the target takes it.
      const media = {
        ...localMedia({ audioFormat: 'mulaw_8000', address, port }),
        codecs: callerCodec === 'PCMA' ? ['PCMA' as const, 'PCMU' as const] : ['PCMU' as const, 'PCMA' as const],
      };
      const dialog = await dialThroughTrunk(
        {
          ua,
          locator,
          outbound,
          requestUri: requestUriFor(t.request.phoneNumber, outbound),
          from: t.callerId === null ? ANONYMOUS_FROM : `<sip:${t.callerId}@${hostPart(address)}>`,
          media,
          signal: dialling.signal,
          log: t.call.log,
          what: 'a transfer leg',
        },
        { ringing: false },
      );
      return { dialog };
    } catch (err) {
      if (timedOut) return { error: `not answered within ${Math.round(this.#o.ringTimeoutMs / 1000)} s`, retry: true };
      if (err instanceof SipError)
        return { error: `${err.status} ${err.reason}`, retry: RETRY_STATUSES.has(err.status) };
      if (err instanceof TransportError || err instanceof TransactionTimeoutError || err instanceof LocateError) {
        return { error: `the trunk could not be reached: ${err.message}`, retry: false };
      }
      return { error: (err as Error).message, retry: false };
    } finally {
      clearTimeout(timer);
      t.abort.signal.removeEventListener('abort', stop);
      this.#o.stopping.removeEventListener('abort', stop);
    }
  }

  /** A transfer settled without (or after failing to make) a bridge: the worker is told, the leg let go. */
  #finish(t: Transfer, result: PhoneTransferResult): void {
    t.call.log.info({ result }, 'transfer result');
    this.#send(t.call, t.id, result);
    if (t.legPort === null) this.#forget(t);
  }

  /** The transfer is over: another (the agent's or the peer's) may start. */
  #forget(t: Transfer): void {
    if (this.#byCall.get(t.call.callId) !== t) return;
    this.#byCall.delete(t.call.callId);
    if (t.call.transferring === 'agent') t.call.transferring = null;
  }

  #send(call: SipCall, transferId: number, result: PhoneTransferResult): void {
    this.#o.control.sendToWorker(call, {
      type: 'call_transfer',
      callId: call.callId,
      command: { kind: 'result', transferId, result },
    });
  }

  /** The new leg is over: BYE while its dialog is up, its port pair freed. Safe twice. */
  #closeLeg(t: Transfer): void {
    const dialog = t.legDialog;
    t.legDialog = null;
    if (dialog && dialog.state === 'confirmed')
      dialog.bye().catch((err: Error) => t.call.log.warn({ err }, 'BYE of a transfer leg failed'));
    if (t.legPort !== null) this.#o.ports.release(t.legPort);
    t.legPort = null;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
