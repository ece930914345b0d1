// The user agent: answers INVITEs (createUAS) and places them (createUAC) on sip/ transports, transactions and
// dialogs. RFC 3261 8 (UA behaviour), 12-15 (dialogs, INVITE, CANCEL, BYE), 22 (digest), RFC 4028 (session
// timers when the peer asks).

import { EventEmitter } from 'node:events';
import { parseCSeq, parseNameAddr, serializeNameAddr, tagOf } from '../message/address.js';
import type { NameAddr, SipRequest, SipResponse, Uri } from '../message/types.js';
import { isSipUri, parseUri, serializeUri } from '../message/uri.js';
import { SipError } from '../errors.js';
import type { Source, Target, TransportName } from '../transport/types.js';
import { parseSdp, serializeSdp, SdpParseError } from '../sdp/parse.js';
import { acceptAnswer, answerOffer, createOffer, type LocalMedia, type NegotiatedMedia } from '../sdp/offer-answer.js';
import { DigestClient, type DigestUser } from '../auth/client.js';
import type { DigestServer } from '../auth/server.js';
import {
  buildInDialogRequest,
  createUacDialog,
  createUasDialog,
  dialogKey,
  keyOfIncomingRequest,
  newTag,
  nextHop,
} from '../dialog/dialog-state.js';
import { ALLOW, Dialog, type DialogSender } from '../dialog/dialog.js';
import { DEFAULT_MIN_SE_SEC, uacSessionTimer, uasSessionTimer } from '../dialog/session-timer.js';
import { DEFAULT_TIMERS, setTimer, systemClock, type Clock, type TimerValues } from '../dialog/timers.js';
import { addVia, buildRequest, buildResponse, fromWithTag, newCallId, resolveTarget } from './messages.js';
import type { ClientTx, ServerTx, TxLayer, TxUser } from './tx-layer.js';

const SDP = 'application/sdp';
/** RFC 3261 22.2 / 22.3: how many challenges to answer for one request (stale=true ones excepted). */
const MAX_AUTH_ATTEMPTS = 2;
/** RFC 3261 13.2.2.4: keep the ACK of a 2xx to re-send it for retransmitted 2xx, for 64*T1. */
const ACK_KEEP_FACTOR = 64;

export interface InviteRequest extends SipRequest {
  source: Source;
}

/** How an incoming INVITE is answered short of accepting it: provisional responses or a rejection. */
export interface InviteResponder {
  send(
    status: number,
    reason?: string,
    opts?: { headers?: Array<[string, string]>; body?: Buffer; contentType?: string },
  ): void;
  /** Resolves when the caller CANCELs (the UA has already answered 487). */
  readonly cancelled: Promise<void>;
  readonly isCancelled: boolean;
}

export interface UasOptions {
  /** Our answer as SDP text, used as is. */
  localSdp?: string;
  /** Or our media capabilities: the answer is negotiated (RFC 3264) and an impossible offer gets 488. */
  media?: LocalMedia;
  headers?: Array<[string, string]>;
}

export interface UacOptions {
  localSdp?: string;
  media?: LocalMedia;
  headers?: Array<[string, string]>;
  /** From header (name-addr or URI); default sip:parley@<our host>. */
  from?: string;
  /** Digest credentials answering 401/407 (RFC 3261 22.2). */
  auth?: DigestUser;
  /** Send through this proxy instead of the Request-URI's host (an outbound proxy). */
  proxy?: string;
  /** Called for each provisional response. */
  onProvisional?: (res: SipResponse) => void;
  /** Abort to CANCEL the INVITE (RFC 3261 9.1); the call then fails with SipError 487. */
  signal?: AbortSignal;
  /** Send the INVITE without SDP: the 2xx carries the offer and our ACK the answer (needs `media`). */
  lateOffer?: boolean;
  /** The call's Call-ID (RFC 3261 8.1.1.4: globally unique); a new one by default. */
  callId?: string;
}

export interface UserAgentEvents {
  invite: [InviteRequest, InviteResponder];
  /** A request outside any dialog other than INVITE/ACK/CANCEL/OPTIONS (answered 405 when unheard). */
  request: [InviteRequest, (status: number, reason: string) => void];
  dialog: [Dialog];
  /**
   * Failures of background work no caller awaits: a stateless send (an ACK, a retransmitted 2xx), resolving an
   * ACK's target, the BYE after an unusable answer, and a dialog's background failures its own 'error'
   * listeners did not hear (DialogEvents.error). Emitted only while an 'error' listener is attached; never
   * thrown, so a process that does not listen is not crashed by a peer that stops answering.
   */
  error: [Error];
}

export interface UserAgentCore {
  tx: TxLayer;
  host: string;
  port: number;
  transports: TransportName[];
  clock?: Clock;
  timers?: TimerValues;
  /** Challenge inbound INVITEs (RFC 3261 22.1). */
  auth?: DigestServer;
  userAgent?: string;
  minSessionExpiresSec?: number;
}

interface PendingInvite {
  req: InviteRequest;
  tx: ServerTx;
  toTag: string;
  answered: boolean;
  cancelled: boolean;
  onCancel: () => void;
}

export class UserAgent extends EventEmitter<UserAgentEvents> implements TxUser {
  readonly host: string;
  readonly port: number;
  readonly dialogs = new Map<string, Dialog>();
  /**
   * Whether this UA takes new calls. It only shapes the answer to OPTIONS (RFC 3261 11.2: the status an INVITE
   * would get): 200 while true, 503 while false (a node stopping); INVITEs are the 'invite' listener's to refuse.
   */
  acceptingCalls = true;
  readonly #tx: TxLayer;
  /** The transport placed calls use unless the URI names one (UserAgentCore.transports[0]). */
  readonly #defaultTransport: TransportName;
  readonly #clock: Clock;
  readonly #timers: TimerValues;
  readonly #auth: DigestServer | undefined;
  readonly #userAgent: string;
  readonly #minSe: number;
  readonly #pending = new Map<string, PendingInvite>();
  /** ACKs we sent for 2xx, by dialog key, to re-send on a retransmitted 2xx (RFC 3261 13.2.2.4). */
  readonly #acks = new Map<string, { ack: SipRequest; target: Target }>();

  constructor(core: UserAgentCore) {
    super();
    this.#tx = core.tx;
    this.host = core.host;
    this.port = core.port;
    const [defaultTransport] = core.transports;
    if (defaultTransport === undefined) throw new TypeError('a user agent needs at least one transport');
    this.#defaultTransport = defaultTransport;
    this.#clock = core.clock ?? systemClock();
    this.#timers = core.timers ?? DEFAULT_TIMERS;
    this.#auth = core.auth;
    this.#userAgent = core.userAgent ?? 'parley';
    this.#minSe = core.minSessionExpiresSec ?? DEFAULT_MIN_SE_SEC;
  }

  /** Open TCP connections of the UA's transport, both directions. */
  get tcpConnectionCount(): number {
    return this.#tx.tcpConnectionCount;
  }

  /** UserAgentEvents.error: to the UA's 'error' listeners, if any; never thrown. */
  reportBackgroundError(err: Error): void {
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }

  #contact(transport: TransportName): NameAddr {
    const host = this.host.includes(':') ? `[${this.host}]` : this.host;
    const t = transport === 'TCP' ? ';transport=tcp' : '';
    return parseNameAddr(`<sip:parley@${host}:${this.port}${t}>`);
  }

  // ---- incoming (TxUser) ----

  request(req: SipRequest, source: Source, tx: ServerTx | null): void {
    const r: InviteRequest = Object.assign(req, { source });
    const key = keyOfIncomingRequest(req);
    if (key !== null) return this.#inDialog(r, key, tx);
    if (req.method === 'ACK') return; // an ACK for a non-2xx is absorbed by its transaction; nothing else to do
    if (tx === null) return;
    switch (req.method) {
      case 'INVITE':
        return this.#incomingInvite(r, tx);
      case 'OPTIONS':
        if (!this.acceptingCalls)
          return tx.respond(buildResponse(req, 503, 'Service Unavailable', { toTag: newTag() }));
        return tx.respond(
          buildResponse(req, 200, 'OK', {
            toTag: newTag(),
            headers: [
              ['Allow', ALLOW],
              ['Accept', SDP],
              ['User-Agent', this.#userAgent],
            ],
          }),
        );
      case 'BYE':
      case 'NOTIFY':
      case 'INFO':
      case 'UPDATE':
      case 'REFER':
        // RFC 3261 12.2.2 / 15.1.2: a mid-dialog method without a dialog.
        return tx.respond(buildResponse(req, 481, 'Call/Transaction Does Not Exist', { toTag: newTag() }));
      default:
        if (this.listenerCount('request') > 0) {
          this.emit('request', r, (status, reason) =>
            tx.respond(buildResponse(req, status, reason, { toTag: newTag() })),
          );
          return;
        }
        return tx.respond(
          buildResponse(req, 405, 'Method Not Allowed', { toTag: newTag(), headers: [['Allow', ALLOW]] }),
        );
    }
  }

  strayResponse(res: SipResponse, _source?: Source): void {
    // RFC 3261 13.2.2.4: a retransmitted 2xx to our INVITE: send the same ACK again.
    const cseq = res.headers.get('CSeq');
    if (res.status < 200 || res.status >= 300 || cseq === undefined || parseCSeq(cseq).method !== 'INVITE') return;
    const to = res.headers.get('To');
    const from = res.headers.get('From');
    const callId = res.headers.get('Call-ID');
    if (!to || !from || !callId) return;
    const ack = this.#acks.get(dialogKey(callId, tagOf(parseNameAddr(from)) ?? '', tagOf(parseNameAddr(to)) ?? ''));
    if (ack) this.#tx.sendStateless(ack.ack, ack.target);
  }

  cancelled(invite: SipRequest): void {
    const p = this.#pending.get(invite.headers.get('Call-ID') ?? '');
    if (!p || p.answered) return;
    p.cancelled = true;
    this.#pending.delete(invite.headers.get('Call-ID') ?? '');
    p.onCancel();
  }

  #inDialog(req: InviteRequest, key: string, tx: ServerTx | null): void {
    const dialog = this.dialogs.get(key);
    if (req.method === 'ACK') {
      dialog?.handleAck(req);
      return;
    }
    if (tx === null) return;
    if (!dialog) return tx.respond(buildResponse(req, 481, 'Call/Transaction Does Not Exist')); // RFC 3261 12.2.2
    dialog.handleRequest(req, (status, reason, opts) => {
      const res = buildResponse(req, status, reason, opts);
      tx.respond(res);
      // RFC 3261 13.3.1.4: a 2xx to a re-INVITE is retransmitted by the UAS core until its ACK.
      if (req.method === 'INVITE' && status >= 200 && status < 300) dialog.sentReinvite2xx(res);
    });
  }

  #incomingInvite(req: InviteRequest, tx: ServerTx): void {
    const callId = req.headers.get('Call-ID') ?? '';
    // RFC 3261 8.2.2.2: a second INVITE of a call still being answered (a merged request) gets 482.
    if (this.#pending.has(callId)) return tx.respond(buildResponse(req, 482, 'Loop Detected', { toTag: newTag() }));
    // RFC 3261 22.1: challenge when the UA was given a digest server.
    if (this.#auth) {
      const check = this.#auth.verify('INVITE', serializeUri(req.uri), req.headers.getAll('Authorization'));
      if (!check.ok) {
        return tx.respond(
          buildResponse(req, 401, 'Unauthorized', {
            toTag: newTag(),
            headers: check.challenges.map((c) => ['WWW-Authenticate', c] as [string, string]),
          }),
        );
      }
    }
    // RFC 4028 9: a Session-Expires below our Min-SE is answered 422.
    const st = uasSessionTimer(req.headers, this.#minSe);
    if (st.kind === 'reject') {
      return tx.respond(
        buildResponse(req, 422, 'Session Interval Too Small', {
          toTag: newTag(),
          headers: [['Min-SE', `${st.minSeSec}`]],
        }),
      );
    }
    // RFC 3261 17.2.1: the transaction layer has already sent 100 Trying.
    let cancel!: () => void;
    const cancelled = new Promise<void>((resolve) => {
      cancel = resolve;
    });
    const pending: PendingInvite = { req, tx, toTag: newTag(), answered: false, cancelled: false, onCancel: cancel };
    this.#pending.set(callId, pending);
    const responder: InviteResponder = {
      send: (status, reason, opts) => {
        if (pending.answered || pending.cancelled) return;
        if (status >= 200) {
          pending.answered = true;
          this.#pending.delete(callId);
        }
        tx.respond(buildResponse(req, status, reason ?? defaultReason(status), { toTag: pending.toTag, ...opts }));
      },
      cancelled,
      get isCancelled() {
        return pending.cancelled;
      },
    };
    if (this.listenerCount('invite') === 0) return responder.send(480, 'Temporarily Unavailable');
    this.emit('invite', req, responder);
  }

  /**
   * Answer an INVITE with 200 and an SDP answer (RFC 3264): `localSdp` as is, or negotiated from
   * `media` (488 and a SipError when the offer cannot be met). Resolves with the confirmed dialog;
   * the 2xx is retransmitted until the ACK (the dialog ends with BYE if none comes).
   */
  async createUAS(req: SipRequest, opts: UasOptions): Promise<Dialog> {
    const callId = req.headers.get('Call-ID') ?? '';
    const pending = this.#pending.get(callId);
    if (!pending || pending.req !== req)
      throw new SipError(
        481,
        'Call/Transaction Does Not Exist',
        'no pending INVITE for this request (answered or cancelled)',
      );
    const remoteSdp = req.body.toString('utf8');
    let localSdp = opts.localSdp;
    let media: NegotiatedMedia | null = null;
    let pendingOffer: string | null = null;
    if (localSdp === undefined && opts.media && remoteSdp.trim().length === 0) {
      // RFC 3261 13.2.1 / RFC 3264: no offer in the INVITE: ours goes in the 2xx, the answer in the ACK.
      localSdp = serializeSdp(createOffer(opts.media));
      pendingOffer = localSdp;
    } else if (localSdp === undefined) {
      if (!opts.media) throw new Error('createUAS needs localSdp or media');
      const result = negotiate(remoteSdp, opts.media);
      if (!result.ok) {
        this.#reject(pending, 488, 'Not Acceptable Here', [['Warning', `304 parley "${result.reason}"`]]);
        throw new SipError(488, 'Not Acceptable Here', result.reason);
      }
      localSdp = result.answer;
      media = result.media;
    }
    const transport: TransportName = pending.req.source.transport;
    const contact = this.#contact(transport);
    const st = uasSessionTimer(req.headers, this.#minSe);
    const headers: Array<[string, string]> = [
      ['Contact', serializeNameAddr(contact)],
      ['Allow', ALLOW],
      ['Supported', 'timer'],
      ['User-Agent', this.#userAgent],
      ...(st.kind === 'accept' ? st.responseHeaders : []),
      ...(opts.headers ?? []),
    ];
    const res = buildResponse(req, 200, 'OK', {
      toTag: pending.toTag,
      headers,
      body: Buffer.from(localSdp),
      contentType: SDP,
    });
    pending.answered = true;
    this.#pending.delete(callId);
    const data = createUasDialog(req, pending.toTag, contact);
    const dialog = new Dialog({
      data,
      sender: this.#sender(transport),
      clock: this.#clock,
      timers: this.#timers,
      localMedia: opts.media ?? null,
      localSdp,
      remoteSdp,
      media,
      sessionTimer: st.kind === 'accept' ? st.timer : null,
      pendingOffer,
      unheardError: (err) => this.reportBackgroundError(err),
    });
    this.#track(dialog, pending.req.source);
    pending.tx.respond(res);
    dialog.awaitAck(res);
    return dialog;
  }

  #reject(p: PendingInvite, status: number, reason: string, headers: Array<[string, string]> = []): void {
    p.answered = true;
    this.#pending.delete(p.req.headers.get('Call-ID') ?? '');
    p.tx.respond(buildResponse(p.req, status, reason, { toTag: p.toTag, headers }));
  }

  /** Keeps the dialog (and the TCP connection it runs over, `at`) until it ends. */
  #track(dialog: Dialog, at: Source | Target): void {
    const key = dialog.key;
    this.dialogs.set(key, dialog);
    const releaseConnection = this.#tx.holdConnection(at);
    dialog.once('ended', () => {
      releaseConnection();
      // Keep the dialog long enough to answer a retransmitted BYE, then forget it.
      setTimer(this.#clock, ACK_KEEP_FACTOR * this.#timers.T1, () => {
        this.dialogs.delete(key);
        this.#acks.delete(key);
      });
    });
    this.emit('dialog', dialog);
  }

  #sender(transport: TransportName): DialogSender {
    return {
      request: async (req, hop) => {
        const target = await resolveTarget(hop, transport);
        addVia(req, this.#tx.sentBy, target.transport);
        return new Promise<SipResponse>((resolve, reject) => {
          this.#tx.send(req, target, { final: resolve, error: reject });
        });
      },
      sendAck: (ack, hop) => {
        resolveTarget(hop, transport).then(
          (target) => {
            addVia(ack, this.#tx.sentBy, target.transport);
            this.#acks.set(keyOfAck(ack), { ack, target });
            this.#tx.sendStateless(ack, target);
          },
          (err: Error) => this.reportBackgroundError(err),
        );
      },
      retransmitResponse: (res) => this.#tx.resendResponse(res),
    };
  }

  // ---- outgoing ----

  /**
   * Place a call (RFC 3261 13.2): INVITE with our offer, following 401/407 with digest credentials.
   * Resolves with the confirmed dialog after the ACK; rejects with SipError(status, reason) for a
   * final non-2xx, TransactionTimeoutError when nobody answers.
   */
  async createUAC(uri: string, opts: UacOptions): Promise<Dialog> {
    const requestUri = parseUriText(uri);
    if (!isSipUri(requestUri)) throw new SipError(416, 'Unsupported URI Scheme');
    const transportParam = requestUri.params.get('transport');
    const transport: TransportName = transportParam?.toUpperCase() === 'TCP' ? 'TCP' : this.#defaultTransport;
    let offerText = opts.localSdp;
    if (opts.lateOffer) {
      if (!opts.media) throw new Error('createUAC({ lateOffer }) needs media to answer the offer');
      offerText = '';
    } else if (offerText === undefined) {
      if (!opts.media) throw new Error('createUAC needs localSdp or media');
      offerText = serializeSdp(createOffer(opts.media));
    }
    const from = fromWithTag(opts.from ?? `<sip:parley@${this.host.includes(':') ? `[${this.host}]` : this.host}>`);
    const to = parseNameAddr(`<${serializeUri(requestUri)}>`);
    to.uri = stripUriParams(to.uri);
    const callId = opts.callId ?? newCallId(this.host);
    const target = await resolveTarget(opts.proxy ? parseUriText(opts.proxy) : requestUri, transport);
    // RFC 3261 8.1.1.8: the Contact names the transport the request actually leaves on (the proxy's, when one
    // is given), so in-dialog requests come back over it.
    const contact = this.#contact(target.transport);
    const digest = opts.auth ? new DigestClient(opts.auth) : null;
    let cseq = 1;
    let authHeaders: Array<[string, string]> = [];
    let attempts = 0;
    for (;;) {
      const invite = buildRequest({
        method: 'INVITE',
        uri: requestUri,
        from,
        to,
        contact,
        callId,
        cseq,
        headers: [
          ['Allow', ALLOW],
          ['Supported', 'timer'],
          ['User-Agent', this.#userAgent],
          ...authHeaders,
          ...(opts.headers ?? []),
        ],
        body: Buffer.from(offerText),
        contentType: offerText.length > 0 ? SDP : undefined,
      });
      addVia(invite, this.#tx.sentBy, target.transport);
      const res = await this.#sendInvite(invite, target, opts.onProvisional, opts.signal);
      if (res.status >= 200 && res.status < 300)
        return this.#confirmUac(invite, res, contact, target, offerText, opts.media ?? null);
      if ((res.status === 401 || res.status === 407) && digest) {
        const header = res.status === 401 ? 'WWW-Authenticate' : 'Proxy-Authenticate';
        const answer = digest.respond(
          res.status,
          res.headers.getAll(header).length > 0 ? res.headers.getFields(header) : [],
          'INVITE',
          serializeUri(requestUri),
        );
        // A stale nonce is retried freely; otherwise at most MAX_AUTH_ATTEMPTS answers per call.
        if (answer && (answer.stale || ++attempts <= MAX_AUTH_ATTEMPTS)) {
          // RFC 3261 22.2: same Call-ID and From tag, CSeq + 1, new branch, credentials added.
          cseq += 1;
          authHeaders = [[answer.name, answer.value]];
          continue;
        }
      }
      throw new SipError(res.status, res.reason, `INVITE ${uri} answered ${res.status} ${res.reason}`);
    }
  }

  #sendInvite(
    invite: SipRequest,
    target: Target,
    onProvisional?: (res: SipResponse) => void,
    signal?: AbortSignal,
  ): Promise<SipResponse> {
    if (signal?.aborted)
      return Promise.reject(new SipError(487, 'Request Terminated', 'aborted before the INVITE was sent'));
    return new Promise<SipResponse>((resolve, reject) => {
      const onAbort = () => ct.cancel();
      const done = () => signal?.removeEventListener('abort', onAbort);
      const ct: ClientTx = this.#tx.send(invite, target, {
        provisional: (res) => onProvisional?.(res),
        final: (res) => {
          done();
          resolve(res);
        },
        error: (err) => {
          done();
          reject(err);
        }, // TransactionTimeoutError (Timer B) or TransportError
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #confirmUac(
    invite: SipRequest,
    res: SipResponse,
    contact: NameAddr,
    target: Target,
    offerText: string,
    media: LocalMedia | null,
  ): Dialog {
    const data = createUacDialog(invite, res, contact);
    const transport = target.transport;
    const sender = this.#sender(transport);
    let negotiated: NegotiatedMedia | null = null;
    let answerText = res.body.toString('utf8');
    let ackBody: Buffer | undefined;
    if (offerText.length === 0 && media) {
      // Late offer: the 2xx holds the peer's offer; the ACK carries our answer (RFC 3264 5, RFC 3261 13.2.2.4).
      const remoteOffer = answerText;
      const r =
        remoteOffer.length > 0
          ? negotiate(remoteOffer, media)
          : { ok: false as const, reason: '2xx without an SDP offer' };
      if (r.ok) {
        negotiated = r.media;
        offerText = r.answer; // our side of the session from now on
        ackBody = Buffer.from(r.answer);
      }
      answerText = remoteOffer;
    } else if (media && answerText.length > 0) {
      try {
        const r = acceptAnswer(parseSdp(offerText), parseSdp(answerText), media);
        negotiated = r.ok ? r.media : null;
      } catch (err) {
        if (!(err instanceof SdpParseError)) throw err;
      }
    }
    const dialog = new Dialog({
      data,
      sender,
      clock: this.#clock,
      timers: this.#timers,
      localMedia: media,
      localSdp: offerText,
      remoteSdp: answerText,
      media: negotiated,
      sessionTimer: uacSessionTimer(res.headers),
      unheardError: (err) => this.reportBackgroundError(err),
    });
    this.#track(dialog, target);
    // RFC 3261 13.2.2.4: the ACK to a 2xx is a new transaction-less request with the INVITE's CSeq.
    const ack = buildInDialogRequest(data, 'ACK', {
      cseq: data.localSeq,
      body: ackBody,
      contentType: ackBody ? SDP : undefined,
    });
    sender.sendAck(ack, nextHop(data));
    if (media && negotiated === null) {
      // RFC 3261 13.2.2.4 / RFC 3264: an unusable answer: ACK, then end the call.
      dialog.bye().catch((err: Error) => this.reportBackgroundError(err));
      throw new SipError(488, 'Not Acceptable Here', 'the answer accepted no usable audio stream');
    }
    return dialog;
  }

  async close(): Promise<void> {
    for (const d of this.dialogs.values()) d.removeAllListeners();
    await this.#tx.close();
  }
}

function keyOfAck(ack: SipRequest): string {
  return dialogKey(
    ack.headers.get('Call-ID') ?? '',
    tagOf(parseNameAddr(ack.headers.get('From') ?? '')) ?? '',
    tagOf(parseNameAddr(ack.headers.get('To') ?? '')) ?? '',
  );
}

function negotiate(
  remoteSdp: string,
  media: LocalMedia,
): { ok: true; answer: string; media: NegotiatedMedia } | { ok: false; reason: string } {
  try {
    const r = answerOffer(parseSdp(remoteSdp), media);
    return r.ok ? { ok: true, answer: serializeSdp(r.answer), media: r.media } : { ok: false, reason: r.reason };
  } catch (err) {
    if (err instanceof SdpParseError) return { ok: false, reason: err.message };
    throw err;
  }
}

function parseUriText(text: string): Uri {
  const t = text.trim();
  return parseUri(t.startsWith('<') ? t.slice(1, t.indexOf('>')) : t);
}

/** RFC 3261 8.1.1.2: the To URI without transport and other routing parameters. */
function stripUriParams(uri: Uri): Uri {
  if (!isSipUri(uri)) return uri;
  return { ...uri, params: new Map(), headers: [] };
}

const REASONS: Record<number, string> = {
  180: 'Ringing',
  183: 'Session Progress',
  200: 'OK',
  403: 'Forbidden',
  404: 'Not Found',
  480: 'Temporarily Unavailable',
  486: 'Busy Here',
  488: 'Not Acceptable Here',
  500: 'Server Internal Error',
  503: 'Service Unavailable',
  603: 'Decline',
};
function defaultReason(status: number): string {
  return REASONS[status] ?? 'Unknown';
}
