// A confirmed INVITE dialog (RFC 3261 12-15): in-dialog requests both ways (BYE, re-INVITE with
// hold/resume, UPDATE, INFO, REFER/NOTIFY, OPTIONS), 2xx retransmission until ACK, session timers,
// and typed events. Sending goes through an injected DialogSender (the UA wires transactions to it),
// so this layer never imports the ones below the message layer.

import { EventEmitter } from 'node:events';
import { parseCSeq, serializeNameAddr } from '../message/address.js';
import type { NameAddr, SipMessage, SipRequest, SipResponse, Uri } from '../message/types.js';
import { SipError } from '../errors.js';
import { parseSdp, serializeSdp, SdpParseError } from '../sdp/parse.js';
import { acceptAnswer, answerOffer, createOffer, type LocalMedia, type NegotiatedMedia } from '../sdp/offer-answer.js';
import {
  acceptRemoteCSeq,
  buildInDialogRequest,
  dialogKey,
  nextHop,
  refreshRemoteTarget,
  type DialogData,
} from './dialog-state.js';
import {
  REFER_EVENT,
  SIPFRAG,
  parseDtmfRelay,
  parseReferTo,
  parseSipfrag,
  parseSubscriptionState,
  referNotifierTransition,
  type ReferNotifierState,
  type SubscriptionState,
} from './refer.js';
import { sessionTimerDeadlineMs, uasSessionTimer, type SessionTimer } from './session-timer.js';
import { DEFAULT_TIMERS, setTimer, type Clock, type TimerHandle, type TimerValues } from './timers.js';
import { initialUas2xx, uas2xxTransition, type Uas2xxState } from './uas-2xx.fsm.js';
import { dialogTransition, type DialogFsmState, type DialogInput, type DialogVerdict } from './dialog.fsm.js';

const SDP = 'application/sdp';
const DTMF_RELAY = 'application/dtmf-relay';

/** What a dialog needs from the UA below it. */
export interface DialogSender {
  /** Send through a client transaction to the next hop; resolves with the final response. */
  request(req: SipRequest, nextHop: Uri): Promise<SipResponse>;
  /** Send a 2xx ACK to the next hop, outside any transaction (RFC 3261 13.2.2.4). */
  sendAck(ack: SipRequest, nextHop: Uri): void;
  /** Retransmit our 2xx to an INVITE (RFC 3261 13.3.1.4), routed by its Via. */
  retransmitResponse(res: SipResponse): void;
}

/** How an in-dialog request received is answered (by its server transaction). */
export type Respond = (
  status: number,
  reason: string,
  opts?: { headers?: Array<[string, string]>; body?: Buffer; contentType?: string },
) => void;

export type EndReason = 'bye_received' | 'bye_sent' | 'ack_timeout' | 'session_expired' | 'refresh_failed';

export interface ReferEvent {
  referTo: NameAddr;
  referredBy: string | null;
  /** Report the referred call's progress; a final status (>= 200) ends the subscription (RFC 3515 2.4.5). */
  notify(status: number, reason: string): Promise<void>;
}

/** What an incoming REFER asks, before it is accepted. */
export interface ReferRequest {
  referTo: NameAddr;
  referredBy: string | null;
}

/** How a REFER is refused (its final response instead of 202). */
export interface ReferRefusal {
  status: number;
  reason: string;
  headers?: Array<[string, string]>;
}

export interface InfoEvent {
  contentType: string | null;
  body: Buffer;
  /** A parsed `application/dtmf-relay` digit. */
  dtmf: { digit: string; durationMs: number | null } | null;
}

export interface NotifyEvent {
  event: string | null;
  subscriptionState: SubscriptionState | null;
  /** The status line of a message/sipfrag body (REFER progress). */
  sipfrag: { status: number; reason: string } | null;
  body: Buffer;
}

export interface DialogEvents {
  ended: [{ reason: EndReason }];
  modified: [{ media: NegotiatedMedia | null; remoteSdp: string }];
  refer: [ReferEvent];
  info: [InfoEvent];
  notify: [NotifyEvent];
  /**
   * Failures of requests the dialog sends on its own, which no caller awaits: the BYE after an ACK timeout, a
   * session expiry or a failed refresh (the dialog has already ended, with its reason, whatever that BYE's
   * outcome: RFC 3261 15.1.1), a session refresh, the first NOTIFY of a REFER, an unusable SDP answer in an ACK.
   * Emitted only while an 'error' listener is attached; otherwise passed to DialogOptions.unheardError (the UA's
   * 'error'). Never thrown: an unheard background failure must not crash the process.
   */
  error: [Error];
}

export type DialogState = 'confirmed' | 'terminated';
export type { DialogFsmState };

export interface DialogOptions {
  data: DialogData;
  sender: DialogSender;
  clock: Clock;
  timers?: TimerValues;
  /** Our media capabilities, to answer re-INVITE offers. */
  localMedia: LocalMedia | null;
  localSdp: string;
  remoteSdp: string;
  media: NegotiatedMedia | null;
  sessionTimer?: SessionTimer | null;
  /** Our offer sent in the 2xx to an INVITE without SDP: the ACK brings the answer (RFC 3264 / 3261 13.2.1). */
  pendingOffer?: string | null;
  /** Gets the background failures no 'error' listener of the dialog heard (see DialogEvents.error). */
  unheardError?: (err: Error) => void;
}

function header(msg: SipMessage, name: string): string | undefined {
  return msg.headers.get(name);
}

/** The type/subtype of a Content-Type value, lower-cased, without parameters (RFC 3261 20.15). */
function mediaTypeOf(contentType: string | undefined): string | null {
  if (contentType === undefined) return null;
  const semicolon = contentType.indexOf(';');
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

export class Dialog extends EventEmitter<DialogEvents> {
  readonly data: DialogData;
  /** The INVITE usage state machine (dialog.fsm.ts). */
  fsm: DialogFsmState = 'confirmed';
  localSdp: string;
  remoteSdp: string;
  media: NegotiatedMedia | null;
  /**
   * Decides each incoming REFER before it is accepted (RFC 3515 2.4.2): null accepts it (202, then the `refer`
   * event); a refusal is sent as its final response. Unset: every REFER goes to the `refer` listeners.
   */
  screenRefer: ((refer: ReferRequest) => ReferRefusal | null) | null = null;
  readonly #sender: DialogSender;
  readonly #clock: Clock;
  readonly #timers: TimerValues;
  #localMedia: LocalMedia | null;
  #uas2xx: { state: Uas2xxState; response: SipResponse; retransmit: TimerHandle; timeout: TimerHandle } | null = null;
  #sessionTimer: SessionTimer | null;
  #sessionTimerHandle: TimerHandle | null = null;
  #sessionVersion = 1;
  /** An offer we put in a 2xx to an offer-less re-INVITE; the ACK carries the answer. */
  #pendingOffer: string | null = null;
  readonly #unheardError: ((err: Error) => void) | undefined;

  constructor(opts: DialogOptions) {
    super();
    this.data = opts.data;
    this.#sender = opts.sender;
    this.#clock = opts.clock;
    this.#timers = opts.timers ?? DEFAULT_TIMERS;
    this.#localMedia = opts.localMedia;
    this.localSdp = opts.localSdp;
    this.remoteSdp = opts.remoteSdp;
    this.media = opts.media;
    this.#sessionTimer = opts.sessionTimer ?? null;
    this.#pendingOffer = opts.pendingOffer ?? null;
    this.#unheardError = opts.unheardError;
    this.#sessionVersion = opts.localMedia?.sessionVersion ?? 1;
    this.#armSessionTimer();
  }

  /** 'terminated' once BYE was sent or received (or the dialog timed out), else 'confirmed'. */
  get state(): DialogState {
    return this.fsm === 'terminated' ? 'terminated' : 'confirmed';
  }

  #input(input: DialogInput): DialogVerdict {
    const { next, verdict } = dialogTransition(this.fsm, input);
    this.fsm = next;
    return verdict;
  }

  get key(): string {
    return dialogKey(this.data.id.callId, this.data.id.localTag, this.data.id.remoteTag);
  }

  get callId(): string {
    return this.data.id.callId;
  }

  // ---- UAS: 2xx retransmission until ACK (RFC 3261 13.3.1.4) ----

  /** Start retransmitting the 2xx we sent to the initial INVITE (or a re-INVITE) until the ACK. */
  awaitAck(response: SipResponse): void {
    this.#stopAckWait();
    this.#input('sent_2xx');
    const init = initialUas2xx(this.#timers);
    const entry = {
      state: init.state,
      response,
      retransmit: setTimer(this.#clock, init.retransmitInMs, () => this.#on2xxInput('timer_2xx_retransmit')),
      timeout: setTimer(this.#clock, init.timeoutInMs, () => this.#on2xxInput('timer_2xx_timeout')),
    };
    this.#uas2xx = entry;
  }

  get awaitingAck(): boolean {
    return this.#uas2xx !== null && this.#uas2xx.state.name === 'waiting_ack';
  }

  #on2xxInput(input: 'ack' | 'timer_2xx_retransmit' | 'timer_2xx_timeout'): void {
    const entry = this.#uas2xx;
    if (!entry) return;
    const { state, action } = uas2xxTransition(entry.state, input, this.#timers);
    entry.state = state;
    switch (action.kind) {
      case 'retransmit':
        this.#sender.retransmitResponse(entry.response);
        entry.retransmit = setTimer(this.#clock, action.nextMs, () => this.#on2xxInput('timer_2xx_retransmit'));
        break;
      case 'stop_timers':
        this.#stopAckWait();
        this.#input('ack');
        break;
      case 'send_bye':
        // RFC 3261 13.3.1.4: no ACK after 64*T1: confirm the dialog and terminate it with BYE.
        this.#stopAckWait();
        this.#byeInBackground('ack_timeout', 'ack_timeout');
        break;
      case 'none':
        break;
    }
  }

  #stopAckWait(): void {
    if (!this.#uas2xx) return;
    this.#uas2xx.retransmit.cancel();
    this.#uas2xx.timeout.cancel();
    this.#uas2xx = null;
  }

  /** An ACK for our 2xx (RFC 3261 13.3.1.4); it may carry the SDP answer to an offer we put in the 2xx. */
  handleAck(ack: SipRequest): void {
    this.#on2xxInput('ack');
    if (
      ack.body.length > 0 &&
      (header(ack, 'Content-Type') ?? '').toLowerCase().startsWith(SDP) &&
      this.#pendingOffer
    ) {
      this.#applyAnswer(this.#pendingOffer, ack.body.toString('utf8'));
      this.#pendingOffer = null;
    }
  }

  // ---- requests we send ----

  /** Send any request inside the dialog; resolves with its final response (non-2xx included). */
  async request(
    method: string,
    opts: { headers?: Array<[string, string]>; body?: Buffer; contentType?: string } = {},
  ): Promise<SipResponse> {
    if (this.state === 'terminated' && method !== 'BYE')
      throw new SipError(481, 'Call/Transaction Does Not Exist', 'dialog terminated');
    const req = buildInDialogRequest(this.data, method, opts);
    return this.#sender.request(req, nextHop(this.data));
  }

  /** RFC 3261 15.1.1: end the call. */
  async bye(): Promise<void> {
    if (this.state === 'terminated') return;
    this.#terminate('bye_sent');
    const res = await this.#sender.request(buildInDialogRequest(this.data, 'BYE'), nextHop(this.data));
    // RFC 3261 15.1.1: the session and dialog end whatever the BYE's final response.
    if (res.status >= 300 && res.status !== 481 && res.status !== 408)
      throw new SipError(res.status, res.reason, `BYE answered ${res.status}`);
  }

  /**
   * RFC 3261 14.1: a re-INVITE with a new offer: our new SDP text, or a direction to hold
   * ('sendonly') / resume ('sendrecv') built from our media capabilities.
   */
  async reinvite(sdp?: string | { direction: LocalMedia['direction'] }): Promise<SipResponse> {
    let offerText: string;
    let local = this.#localMedia;
    if (typeof sdp === 'string') offerText = sdp;
    else {
      if (local === null) throw new Error("reinvite without SDP needs the dialog's localMedia");
      local = { ...local, direction: sdp?.direction ?? local.direction, sessionVersion: ++this.#sessionVersion };
      offerText = serializeSdp(createOffer(local));
    }
    const verdict = this.#input('send_reinvite');
    if (verdict === 'reject_491') throw new SipError(491, 'Request Pending', 'an INVITE transaction is in progress');
    if (verdict === 'reject_481') throw new SipError(481, 'Call/Transaction Does Not Exist', 'dialog terminated');
    try {
      const res = await this.request('INVITE', {
        body: Buffer.from(offerText),
        contentType: SDP,
        headers: this.#sessionTimerHeaders(),
      });
      const ack = buildInDialogRequest(this.data, 'ACK', {
        cseq: parseCSeq(res.headers.get('CSeq') ?? '0 INVITE').seq,
      });
      if (res.status >= 200 && res.status < 300) {
        this.#sender.sendAck(ack, nextHop(this.data));
        refreshRemoteTarget(this.data, res);
        this.localSdp = offerText;
        if (local) this.#localMedia = local;
        if (res.body.length > 0) this.#applyAnswer(offerText, res.body.toString('utf8'));
        this.#armSessionTimer();
      } else if (res.status === 408 || res.status === 481) {
        // RFC 3261 14.1: the dialog is gone.
        this.#byeInBackground('refresh_failed');
      }
      return res;
    } finally {
      this.#input('reinvite_done');
    }
  }

  /** INFO (RFC 6086), e.g. a digit as application/dtmf-relay. */
  async info(body: Buffer | string, contentType = DTMF_RELAY): Promise<SipResponse> {
    return this.request('INFO', { body: Buffer.from(body), contentType });
  }

  /**
   * RFC 3515 2.4.1: ask the peer to call `target`. Resolves with the REFER's final response (202 when
   * accepted); the transfer's progress arrives as `notify` events with a sipfrag.
   */
  async refer(
    target: string,
    opts: { referredBy?: string; headers?: Array<[string, string]> } = {},
  ): Promise<SipResponse> {
    const headers: Array<[string, string]> = [['Refer-To', target.startsWith('<') ? target : `<${target}>`]];
    if (opts.referredBy) headers.push(['Referred-By', opts.referredBy]); // RFC 3892
    return this.request('REFER', { headers: [...headers, ...(opts.headers ?? [])] });
  }

  // ---- requests we receive ----

  /** A request inside this dialog (the UA matched its dialog id). ACK goes to handleAck. */
  handleRequest(req: SipRequest, respond: Respond): void {
    const check = acceptRemoteCSeq(this.data, req);
    if (!check.ok) return respond(check.status, check.reason); // RFC 3261 12.2.2
    if (this.state === 'terminated' && req.method !== 'BYE') return respond(481, 'Call/Transaction Does Not Exist');
    switch (req.method) {
      case 'BYE':
        respond(200, 'OK');
        if (this.state !== 'terminated') this.#terminate('bye_received');
        return;
      case 'INVITE':
      case 'UPDATE':
        return this.#handleOffer(req, respond);
      case 'INFO':
        return this.#handleInfo(req, respond);
      case 'REFER':
        return this.#handleRefer(req, respond);
      case 'NOTIFY':
        return this.#handleNotify(req, respond);
      case 'OPTIONS':
        return respond(200, 'OK', {
          headers: [
            ['Allow', ALLOW],
            ['Accept', SDP],
          ],
        });
      default:
        // RFC 3261 8.2.1: a method we do not support inside a dialog.
        return respond(405, 'Method Not Allowed', { headers: [['Allow', ALLOW]] });
    }
  }

  #handleOffer(req: SipRequest, respond: Respond): void {
    if (req.method === 'INVITE' && this.#input('receive_reinvite') === 'reject_491') {
      return respond(491, 'Request Pending'); // RFC 3261 14.2: glare
    }
    const st = uasSessionTimer(req.headers);
    if (st.kind === 'reject')
      return respond(422, 'Session Interval Too Small', { headers: [['Min-SE', `${st.minSeSec}`]] });
    refreshRemoteTarget(this.data, req);
    const extra: Array<[string, string]> = [
      ['Contact', serializeNameAddr(this.data.localContact)],
      ...(st.kind === 'accept' ? st.responseHeaders : []),
    ];
    if (st.kind === 'accept') this.#sessionTimer = st.timer;
    this.#armSessionTimer();
    const hasSdp = req.body.length > 0 && (header(req, 'Content-Type') ?? '').toLowerCase().startsWith(SDP);
    if (!hasSdp) {
      if (req.method === 'UPDATE') return respond(200, 'OK', { headers: extra }); // a session refresh only
      // RFC 3264 / RFC 3261 14.2: offer in our 2xx, answer in the ACK.
      const offer = this.#localMedia
        ? serializeSdp(createOffer({ ...this.#localMedia, sessionVersion: ++this.#sessionVersion }))
        : this.localSdp;
      this.#pendingOffer = offer;
      return this.#answerInvite(respond, offer, extra);
    }
    const remoteSdp = req.body.toString('utf8');
    let answerText: string;
    let media: NegotiatedMedia | null = null;
    if (this.#localMedia) {
      let offer;
      try {
        offer = parseSdp(remoteSdp);
      } catch (err) {
        if (!(err instanceof SdpParseError)) throw err;
        return respond(488, 'Not Acceptable Here', { headers: [['Warning', `399 parley "${err.message}"`]] });
      }
      const result = answerOffer(offer, { ...this.#localMedia, sessionVersion: this.#sessionVersion + 1 });
      if (!result.ok)
        return respond(488, 'Not Acceptable Here', { headers: [['Warning', `304 parley "${result.reason}"`]] }); // RFC 3264 6
      this.#sessionVersion += 1;
      answerText = serializeSdp(result.answer);
      media = result.media;
    } else {
      answerText = this.localSdp;
    }
    this.remoteSdp = remoteSdp;
    this.localSdp = answerText;
    this.media = media;
    if (req.method === 'INVITE') this.#answerInvite(respond, answerText, extra);
    else respond(200, 'OK', { headers: extra, body: Buffer.from(answerText), contentType: SDP });
    this.emit('modified', { media, remoteSdp });
  }

  #answerInvite(respond: Respond, sdp: string, headers: Array<[string, string]>): void {
    respond(200, 'OK', { headers, body: Buffer.from(sdp), contentType: SDP });
  }

  /** The UA tells us the 2xx it sent to a re-INVITE, so we retransmit it until the ACK. */
  sentReinvite2xx(response: SipResponse): void {
    this.awaitAck(response);
  }

  #handleInfo(req: SipRequest, respond: Respond): void {
    const contentType = mediaTypeOf(header(req, 'Content-Type'));
    respond(200, 'OK');
    this.emit('info', {
      contentType,
      body: req.body,
      dtmf: contentType === DTMF_RELAY ? parseDtmfRelay(req.body) : null,
    });
  }

  #handleRefer(req: SipRequest, respond: Respond): void {
    let referTo: NameAddr | null;
    try {
      referTo = parseReferTo(header(req, 'Refer-To'));
    } catch (err) {
      if (!(err instanceof SipError)) throw err;
      return respond(400, 'Bad Request', { headers: [['Warning', `399 parley "bad Refer-To"`]] });
    }
    // RFC 3515 2.4.1: exactly one Refer-To.
    if (referTo === null || req.headers.getAll('Refer-To').length !== 1) return respond(400, 'Bad Request');
    const refusal = this.screenRefer?.({ referTo, referredBy: header(req, 'Referred-By') ?? null }) ?? null;
    if (refusal !== null) return respond(refusal.status, refusal.reason, { headers: refusal.headers });
    if (this.listenerCount('refer') === 0) return respond(603, 'Decline');
    const cseq = parseCSeq(header(req, 'CSeq') ?? '0 REFER').seq;
    respond(202, 'Accepted'); // RFC 3515 2.4.2
    let state: ReferNotifierState = { name: 'active' };
    const notify = async (status: number, reason: string): Promise<void> => {
      const step = referNotifierTransition(state, { kind: 'progress', status, reason });
      state = step.state;
      if (!step.notify) return;
      const res = await this.request('NOTIFY', {
        // RFC 3515 2.4.6: Event: refer;id=<CSeq of the REFER>
        headers: [
          ['Event', `${REFER_EVENT};id=${cseq}`],
          ['Subscription-State', step.notify.subscriptionState],
        ],
        body: step.notify.body,
        contentType: SIPFRAG,
      });
      if (res.status >= 300) throw new SipError(res.status, res.reason, `NOTIFY answered ${res.status}`);
    };
    // RFC 3515 2.4.4: the first NOTIFY follows the 202 at once with "100 Trying".
    notify(100, 'Trying').catch((err: Error) => this.#backgroundFailure(err));
    this.emit('refer', { referTo, referredBy: header(req, 'Referred-By') ?? null, notify });
  }

  #handleNotify(req: SipRequest, respond: Respond): void {
    const contentType = header(req, 'Content-Type')?.toLowerCase() ?? '';
    respond(200, 'OK');
    this.emit('notify', {
      event: header(req, 'Event') ?? null,
      subscriptionState: parseSubscriptionState(header(req, 'Subscription-State')),
      sipfrag: contentType.startsWith('message/sipfrag') ? parseSipfrag(req.body) : null,
      body: req.body,
    });
  }

  #applyAnswer(offerText: string, answerText: string): void {
    this.remoteSdp = answerText;
    let media: NegotiatedMedia | null = null;
    if (this.#localMedia) {
      try {
        const r = acceptAnswer(parseSdp(offerText), parseSdp(answerText), this.#localMedia);
        media = r.ok ? r.media : null;
      } catch (err) {
        if (!(err instanceof SdpParseError)) throw err;
        this.#backgroundFailure(err);
      }
    }
    this.media = media;
    this.emit('modified', { media, remoteSdp: answerText });
  }

  // ---- session timers (RFC 4028) ----

  #sessionTimerHeaders(): Array<[string, string]> {
    const t = this.#sessionTimer;
    return t
      ? [
          ['Session-Expires', `${t.intervalSec};refresher=${t.refresher}`],
          ['Supported', 'timer'],
        ]
      : [];
  }

  #armSessionTimer(): void {
    this.#sessionTimerHandle?.cancel();
    this.#sessionTimerHandle = null;
    const t = this.#sessionTimer;
    if (!t || this.state === 'terminated') return;
    const deadline = sessionTimerDeadlineMs(t, this.data.role);
    this.#sessionTimerHandle = setTimer(this.#clock, deadline.inMs, () => {
      if (deadline.kind === 'expire') return this.#byeInBackground('session_expired'); // RFC 4028 10
      this.reinvite(this.localSdp).catch((err: Error) => this.#backgroundFailure(err)); // RFC 4028 10: refresh
    });
  }

  /** DialogEvents.error: to the dialog's listeners, else to unheardError; never thrown. */
  #backgroundFailure(err: Error): void {
    if (this.listenerCount('error') > 0) this.emit('error', err);
    else this.#unheardError?.(err);
  }

  // ---- ending ----

  #terminate(reason: EndReason, input: DialogInput = 'bye'): void {
    if (this.state === 'terminated') return;
    this.#input(input);
    this.#stopAckWait();
    this.#sessionTimerHandle?.cancel();
    this.emit('ended', { reason });
  }

  #byeInBackground(reason: EndReason, input: DialogInput = 'bye'): void {
    if (this.state === 'terminated') return;
    this.#terminate(reason, input);
    this.#sender
      .request(buildInDialogRequest(this.data, 'BYE'), nextHop(this.data))
      .catch((err: Error) => this.#backgroundFailure(err));
  }
}

export const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, REFER, NOTIFY, UPDATE';
