// Typed accessors for the headers every layer reads, and builders for new requests and responses
// (RFC 3261 8.1.1, 8.2.6). Accessors throw SipParseError when the header is missing or malformed.
import { randomBytes } from 'node:crypto';
import { SipParseError } from '../errors.js';
import { parseCSeq, parseNameAddr, parseVia, serializeNameAddr } from './address.js';
import { Headers } from './headers.js';
import {
  BRANCH_MAGIC_COOKIE,
  SIP_VERSION,
  type CSeq,
  type NameAddr,
  type SipMessage,
  type SipRequest,
  type SipResponse,
  type Uri,
  type Via,
} from './types.js';

function required(msg: SipMessage, name: string): string {
  const v = msg.headers.get(name);
  if (v === undefined) throw new SipParseError(`missing ${name}`);
  return v;
}

/** All Via values, top first. */
export function viasOf(msg: SipMessage): Via[] {
  return msg.headers.getAll('Via').map(parseVia);
}

/** The top Via (RFC 3261 8.1.1.7, 18.2.2). */
export function topVia(msg: SipMessage): Via {
  const top = msg.headers.first('Via');
  if (top === undefined) throw new SipParseError('missing Via');
  return parseVia(top);
}

export function fromOf(msg: SipMessage): NameAddr {
  return parseNameAddr(required(msg, 'From'));
}

export function toOf(msg: SipMessage): NameAddr {
  return parseNameAddr(required(msg, 'To'));
}

export function callIdOf(msg: SipMessage): string {
  return required(msg, 'Call-ID');
}

export function cseqOf(msg: SipMessage): CSeq {
  return parseCSeq(required(msg, 'CSeq'));
}

/** Contact values (empty when absent). */
export function contactsOf(msg: SipMessage): NameAddr[] {
  return msg.headers.getAll('Contact').map(parseNameAddr);
}

/** A new branch with the RFC 3261 magic cookie (8.1.1.7), unique in space and time. */
export function newBranch(): string {
  return BRANCH_MAGIC_COOKIE + randomBytes(10).toString('hex');
}

/** A new From/To tag (RFC 3261 19.3: at least 32 bits of randomness). */
export function newTag(): string {
  return randomBytes(6).toString('hex');
}

/** A new Call-ID (RFC 3261 8.1.1.4), globally unique. */
export function newCallId(host?: string): string {
  const id = randomBytes(12).toString('hex');
  return host ? `${id}@${host}` : id;
}

export interface RequestInit {
  method: string;
  uri: Uri;
  headers?: Iterable<readonly [string, string]>;
  body?: Buffer | string;
}

/** A request with the given headers in the given order; Content-Length is written by the serializer. */
export function createRequest(init: RequestInit): SipRequest {
  return {
    kind: 'request',
    method: init.method,
    uri: init.uri,
    version: SIP_VERSION,
    headers: new Headers(init.headers),
    body: typeof init.body === 'string' ? Buffer.from(init.body, 'utf8') : (init.body ?? Buffer.alloc(0)),
  };
}

/** Default reason phrases (RFC 3261 21). */
export const REASON_PHRASES: Record<number, string> = {
  100: 'Trying',
  180: 'Ringing',
  181: 'Call Is Being Forwarded',
  182: 'Queued',
  183: 'Session Progress',
  200: 'OK',
  202: 'Accepted',
  300: 'Multiple Choices',
  301: 'Moved Permanently',
  302: 'Moved Temporarily',
  305: 'Use Proxy',
  380: 'Alternative Service',
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  410: 'Gone',
  413: 'Request Entity Too Large',
  414: 'Request-URI Too Long',
  415: 'Unsupported Media Type',
  416: 'Unsupported URI Scheme',
  420: 'Bad Extension',
  421: 'Extension Required',
  422: 'Session Interval Too Small',
  423: 'Interval Too Brief',
  480: 'Temporarily Unavailable',
  481: 'Call/Transaction Does Not Exist',
  482: 'Loop Detected',
  483: 'Too Many Hops',
  484: 'Address Incomplete',
  485: 'Ambiguous',
  486: 'Busy Here',
  487: 'Request Terminated',
  488: 'Not Acceptable Here',
  489: 'Bad Event',
  491: 'Request Pending',
  493: 'Undecipherable',
  500: 'Server Internal Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Server Time-out',
  505: 'Version Not Supported',
  513: 'Message Too Large',
  600: 'Busy Everywhere',
  603: 'Decline',
  604: 'Does Not Exist Anywhere',
  606: 'Not Acceptable',
};

export interface ResponseOptions {
  reason?: string;
  /** Tag to add to To when the request's To has none (RFC 3261 8.2.6.2; not on 100 Trying). */
  toTag?: string;
  headers?: Iterable<readonly [string, string]>;
  body?: Buffer | string;
}

/**
 * A response to a request (RFC 3261 8.2.6.2): Via (all, in order), From, To (with a tag added when asked
 * and absent), Call-ID and CSeq copied; 100 also copies Timestamp (8.2.6.1). Extra headers appended.
 */
export function createResponse(req: SipRequest, status: number, opts: ResponseOptions = {}): SipResponse {
  const headers = new Headers();
  for (const v of req.headers.getFields('Via')) headers.add('Via', v);
  const from = req.headers.get('From');
  if (from !== undefined) headers.add('From', from);
  const to = req.headers.get('To');
  if (to !== undefined) {
    let toValue = to;
    if (opts.toTag !== undefined && status !== 100) {
      try {
        const na = parseNameAddr(to);
        if (!na.params.has('tag')) {
          na.params.set('tag', opts.toTag);
          toValue = serializeNameAddr(na);
        }
      } catch (err) {
        if (!(err instanceof SipParseError)) throw err;
        // a malformed To is echoed unchanged (the response is most likely a 400)
      }
    }
    headers.add('To', toValue);
  }
  const callId = req.headers.get('Call-ID');
  if (callId !== undefined) headers.add('Call-ID', callId);
  const cseq = req.headers.get('CSeq');
  if (cseq !== undefined) headers.add('CSeq', cseq);
  if (status === 100) {
    const ts = req.headers.get('Timestamp');
    if (ts !== undefined) headers.add('Timestamp', ts);
  }
  if (opts.headers) for (const [n, v] of opts.headers) headers.add(n, v);
  return {
    kind: 'response',
    version: SIP_VERSION,
    status,
    reason: opts.reason ?? REASON_PHRASES[status] ?? 'Unknown',
    headers,
    body: typeof opts.body === 'string' ? Buffer.from(opts.body, 'utf8') : (opts.body ?? Buffer.alloc(0)),
  };
}
