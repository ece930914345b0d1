// Building the messages a UA core creates outside a dialog (RFC 3261 8.1.1, 8.2.6) and resolving a
// URI to where a request is sent (a simplified RFC 3263: transport parameter, IP or A/AAAA, port).

import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { parseNameAddr, serializeNameAddr } from '../message/address.js';
import { Headers } from '../message/headers.js';
import {
  BRANCH_MAGIC_COOKIE,
  SIP_VERSION,
  type NameAddr,
  type SipRequest,
  type SipResponse,
  type Uri,
} from '../message/types.js';
import { isSipUri, parseUri } from '../message/uri.js';
import { resolveHost } from '../transport/transport.js';
import { bareAddress } from '../transport/via.js';
import { DEFAULT_SIP_PORT, type Target, type TransportName } from '../transport/types.js';
import { SipError } from '../errors.js';
import { MAX_FORWARDS, newTag } from '../dialog/dialog-state.js';

export function newBranch(): string {
  return BRANCH_MAGIC_COOKIE + randomBytes(8).toString('hex'); // RFC 3261 8.1.1.7
}

export function newCallId(host: string): string {
  return `${randomBytes(12).toString('hex')}@${host}`; // RFC 3261 8.1.1.4: globally unique
}

/** RFC 3261 8.1.1.7: the UA core puts a Via with a fresh branch on top of every request it sends. */
export function addVia(req: SipRequest, sentBy: string, transport: TransportName, branch = newBranch()): string {
  // RFC 3581 3: ask for rport so responses come back to the port we sent from.
  req.headers.prepend('Via', `SIP/2.0/${transport} ${sentBy};branch=${branch};rport`);
  return branch;
}

export interface ResponseOptions {
  toTag?: string;
  headers?: Array<[string, string]>;
  body?: Buffer;
  contentType?: string;
}

/** RFC 3261 8.2.6.2: a response copies Via, From, Call-ID, CSeq and To (with our tag) from the request. */
export function buildResponse(
  req: SipRequest,
  status: number,
  reason: string,
  opts: ResponseOptions = {},
): SipResponse {
  const headers = new Headers();
  for (const v of req.headers.getFields('Via')) headers.add('Via', v);
  if (status >= 180 || status === 101)
    for (const v of req.headers.getFields('Record-Route')) headers.add('Record-Route', v); // RFC 3261 12.1.1
  headers.add('From', req.headers.get('From') ?? '');
  let to = req.headers.get('To') ?? '';
  if (opts.toTag && status > 100 && !/;\s*tag=/i.test(to)) to += `;tag=${opts.toTag}`;
  headers.add('To', to);
  headers.add('Call-ID', req.headers.get('Call-ID') ?? '');
  headers.add('CSeq', req.headers.get('CSeq') ?? '');
  for (const [n, v] of opts.headers ?? []) headers.add(n, v);
  const body = opts.body ?? Buffer.alloc(0);
  if (body.length > 0 && opts.contentType) headers.add('Content-Type', opts.contentType);
  return { kind: 'response', version: SIP_VERSION, status, reason, headers, body };
}

export interface OutOfDialogRequest {
  method: string;
  uri: Uri;
  from: NameAddr;
  to: NameAddr;
  contact: NameAddr;
  callId: string;
  cseq: number;
  headers?: Array<[string, string]>;
  body?: Buffer;
  contentType?: string;
}

/** RFC 3261 8.1.1: a request outside a dialog (without Via: addVia puts it on when sent). */
export function buildRequest(r: OutOfDialogRequest): SipRequest {
  const headers = new Headers();
  headers.add('Max-Forwards', `${MAX_FORWARDS}`);
  headers.add('From', serializeNameAddr(r.from));
  headers.add('To', serializeNameAddr(r.to));
  headers.add('Call-ID', r.callId);
  headers.add('CSeq', `${r.cseq} ${r.method}`);
  headers.add('Contact', serializeNameAddr(r.contact));
  for (const [n, v] of r.headers ?? []) headers.add(n, v);
  const body = r.body ?? Buffer.alloc(0);
  if (body.length > 0 && r.contentType) headers.add('Content-Type', r.contentType);
  return { kind: 'request', method: r.method, uri: r.uri, version: SIP_VERSION, headers, body };
}

/** A From with a fresh tag (RFC 3261 8.1.1.3). */
export function fromWithTag(text: string): NameAddr {
  const na = parseNameAddr(text);
  na.params.set('tag', newTag());
  return na;
}

export function parseTarget(text: string): Uri {
  return parseUri(text.startsWith('<') ? text.slice(1, text.indexOf('>')) : text);
}

/**
 * Where to send a request whose next hop is `uri` (RFC 3263 4 without NAPTR/SRV): the transport
 * parameter (UDP by default), the host as an address (A/AAAA), the port or 5060.
 */
export async function resolveTarget(uri: Uri, fallback: TransportName = 'UDP'): Promise<Target> {
  if (!isSipUri(uri)) throw new SipError(416, 'Unsupported URI Scheme', `cannot route to ${uri.scheme}:`);
  const param = uri.params.get('transport');
  const transport: TransportName = param ? (param.toUpperCase() === 'TCP' ? 'TCP' : 'UDP') : fallback;
  const maddr = uri.params.get('maddr');
  const host = bareAddress(maddr ?? uri.host);
  const address = isIP(host) ? host : await resolveHost(host);
  return { transport, address, port: uri.port ?? DEFAULT_SIP_PORT };
}
