// Dialog state of RFC 3261 section 12: the dialog id, local and remote URIs and tags, CSeq numbers,
// remote target and route set; building requests inside the dialog (12.2.1.1) and checking the ones
// that arrive (12.2.2). Pure data and functions: sending belongs to the UA.

import { randomBytes } from 'node:crypto';
import { parseCSeq, parseNameAddr, serializeNameAddr, tagOf } from '../message/address.js';
import { Headers } from '../message/headers.js';
import type { NameAddr, SipRequest, SipResponse, Uri } from '../message/types.js';
import { isSipUri, serializeUri } from '../message/uri.js';
import { SipError } from '../errors.js';

export interface DialogId {
  callId: string;
  localTag: string;
  remoteTag: string;
}

export interface DialogData {
  id: DialogId;
  /** RFC 3261 12.1: the side that sent the INVITE. */
  role: 'uac' | 'uas';
  local: NameAddr;
  remote: NameAddr;
  /** RFC 3261 12.1.1/12.1.2: the Contact of the peer, replaced by target refresh requests (12.2). */
  remoteTarget: Uri;
  localContact: NameAddr;
  /** RFC 3261 12.1.1: Record-Route in order (UAS); 12.1.2: reversed (UAC). Fixed for the dialog's life. */
  routeSet: NameAddr[];
  /** Last CSeq number this side used; the next request takes localSeq + 1 (12.2.1.1). */
  localSeq: number;
  /** Highest CSeq number seen from the peer; null until its first request (12.2.2). */
  remoteSeq: number | null;
  secure: boolean;
}

/** A dialog identifier string usable as a map key (Call-ID + both tags). */
export function dialogKey(callId: string, localTag: string, remoteTag: string): string {
  return `${callId}\u0000${localTag}\u0000${remoteTag}`;
}

export function newTag(): string {
  return randomBytes(6).toString('hex');
}

function header(msg: SipRequest | SipResponse, name: string): string {
  const v = msg.headers.get(name);
  if (v === undefined) throw new SipError(400, 'Bad Request', `missing ${name}`);
  return v;
}

function contactOf(msg: SipRequest | SipResponse): Uri {
  const v = msg.headers.getAll('Contact')[0];
  // RFC 3261 12.1.1 / 12.1.2: a dialog-creating message carries exactly one Contact.
  if (v === undefined) throw new SipError(400, 'Bad Request', 'dialog-creating message without Contact');
  return parseNameAddr(v).uri;
}

function recordRoutes(msg: SipRequest | SipResponse): NameAddr[] {
  return msg.headers.getAll('Record-Route').map((v) => parseNameAddr(v));
}

/**
 * RFC 3261 12.1.1: the UAS side of a dialog created by answering `request` with a 2xx (or 1xx with a
 * To tag). `localTag` is the tag put in the response's To.
 */
export function createUasDialog(request: SipRequest, localTag: string, localContact: NameAddr): DialogData {
  const from = parseNameAddr(header(request, 'From'));
  const to = parseNameAddr(header(request, 'To'));
  const remoteTag = tagOf(from) ?? '';
  to.params.set('tag', localTag);
  return {
    id: { callId: header(request, 'Call-ID'), localTag, remoteTag },
    role: 'uas',
    local: to,
    remote: from,
    remoteTarget: contactOf(request),
    localContact,
    routeSet: recordRoutes(request),
    localSeq: 0, // RFC 3261 12.1.1: empty; the first request we send picks a fresh number
    remoteSeq: parseCSeq(header(request, 'CSeq')).seq,
    secure: isSipUri(request.uri) && request.uri.scheme === 'sips',
  };
}

/** RFC 3261 12.1.2: the UAC side of a dialog created by a 2xx (or 1xx with To tag) to our INVITE. */
export function createUacDialog(request: SipRequest, response: SipResponse, localContact: NameAddr): DialogData {
  const from = parseNameAddr(header(request, 'From'));
  const to = parseNameAddr(header(response, 'To'));
  return {
    id: { callId: header(request, 'Call-ID'), localTag: tagOf(from) ?? '', remoteTag: tagOf(to) ?? '' },
    role: 'uac',
    local: from,
    remote: to,
    remoteTarget: contactOf(response),
    localContact,
    routeSet: recordRoutes(response).reverse(),
    localSeq: parseCSeq(header(request, 'CSeq')).seq,
    remoteSeq: null,
    secure: isSipUri(request.uri) && request.uri.scheme === 'sips',
  };
}

/** RFC 3261 12.2.1.1: where a request goes (Request-URI and Route header values). */
export function requestTarget(d: DialogData): { uri: Uri; routes: string[] } {
  const [first] = d.routeSet;
  if (first === undefined) return { uri: d.remoteTarget, routes: [] };
  if (isSipUri(first.uri) && first.uri.params.has('lr')) {
    return { uri: d.remoteTarget, routes: d.routeSet.map(serializeNameAddr) };
  }
  // Strict routing (RFC 2543 proxy): the first route becomes the Request-URI, the target goes last.
  const routes = d.routeSet.slice(1).map(serializeNameAddr);
  routes.push(`<${serializeUri(d.remoteTarget)}>`);
  return { uri: first.uri, routes };
}

/** The URI the request is physically sent to: the first Route, or the Request-URI (RFC 3261 8.1.2). */
export function nextHop(d: DialogData): Uri {
  return d.routeSet[0]?.uri ?? d.remoteTarget;
}

export interface InDialogRequestOptions {
  /** Extra headers in order. */
  headers?: Array<[string, string]>;
  body?: Buffer;
  contentType?: string;
  /** CSeq to use instead of a new one (ACK and CANCEL reuse the INVITE's, RFC 3261 13.2.2.4). */
  cseq?: number;
}

export const MAX_FORWARDS = 70; // RFC 3261 8.1.1.6
// RFC 3261 12.2.1.1 / RFC 3311 / RFC 3515 / RFC 6665: target refresh and subscription requests carry Contact.
const CONTACT_METHODS = new Set(['INVITE', 'UPDATE', 'REFER', 'NOTIFY', 'SUBSCRIBE']);

/**
 * RFC 3261 12.2.1.1: a request inside the dialog, without Via (the transaction layer adds it).
 * Takes the next local CSeq unless one is given.
 */
export function buildInDialogRequest(d: DialogData, method: string, opts: InDialogRequestOptions = {}): SipRequest {
  let seq: number;
  if (opts.cseq !== undefined) seq = opts.cseq;
  else {
    // RFC 3261 12.2.1.1: strictly monotonically increasing by one; a UAS's first request starts anywhere.
    d.localSeq = d.localSeq === 0 ? initialCSeq() : d.localSeq + 1;
    seq = d.localSeq;
  }
  const target = requestTarget(d);
  const headers = new Headers();
  for (const r of target.routes) headers.add('Route', r);
  headers.add('Max-Forwards', `${MAX_FORWARDS}`);
  headers.add('From', serializeNameAddr(d.local));
  headers.add('To', serializeNameAddr(d.remote));
  headers.add('Call-ID', d.id.callId);
  headers.add('CSeq', `${seq} ${method}`);
  if (CONTACT_METHODS.has(method)) headers.add('Contact', serializeNameAddr(d.localContact));
  for (const [n, v] of opts.headers ?? []) headers.add(n, v);
  const body = opts.body ?? Buffer.alloc(0);
  if (body.length > 0 && opts.contentType) headers.add('Content-Type', opts.contentType);
  return { kind: 'request', method, uri: target.uri, version: 'SIP/2.0', headers, body };
}

/** RFC 3261 8.1.1.5: the first CSeq is below 2**31; small random keeps room to grow. */
export function initialCSeq(): number {
  return 1 + (randomBytes(2).readUInt16BE(0) & 0x3fff);
}

export type RemoteCheck = { ok: true } | { ok: false; status: 500; reason: string };

/**
 * RFC 3261 12.2.2: a request whose CSeq is lower than the last one seen is out of order and gets a 500;
 * otherwise the remote sequence number advances. ACK and CANCEL carry the INVITE's number and do not.
 */
export function acceptRemoteCSeq(d: DialogData, request: SipRequest): RemoteCheck {
  const cseq = parseCSeq(header(request, 'CSeq'));
  if (request.method === 'ACK' || request.method === 'CANCEL') return { ok: true };
  if (d.remoteSeq !== null && cseq.seq <= d.remoteSeq) {
    return { ok: false, status: 500, reason: 'Server Internal Error' };
  }
  d.remoteSeq = cseq.seq;
  return { ok: true };
}

/** RFC 3261 12.2 / RFC 3311 5.2: re-INVITE and UPDATE (and their 2xx) may replace the remote target. */
export function refreshRemoteTarget(d: DialogData, msg: SipRequest | SipResponse): void {
  const v = msg.headers.getAll('Contact')[0];
  if (v !== undefined) d.remoteTarget = parseNameAddr(v).uri;
}

/** The dialog key of an incoming request (its To tag is ours, its From tag the peer's). */
export function keyOfIncomingRequest(request: SipRequest): string | null {
  const to = request.headers.get('To');
  const from = request.headers.get('From');
  const callId = request.headers.get('Call-ID');
  if (!to || !from || !callId) return null;
  const localTag = tagOf(parseNameAddr(to));
  if (!localTag) return null;
  return dialogKey(callId, localTag, tagOf(parseNameAddr(from)) ?? '');
}

/** The dialog key of a response to our request (its From tag is ours, its To tag the peer's). */
export function keyOfResponse(response: SipResponse): string | null {
  const to = response.headers.get('To');
  const from = response.headers.get('From');
  const callId = response.headers.get('Call-ID');
  if (!to || !from || !callId) return null;
  return dialogKey(callId, tagOf(parseNameAddr(from)) ?? '', tagOf(parseNameAddr(to)) ?? '');
}
