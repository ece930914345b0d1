// SIP message parser (RFC 3261 7, 25): start line, header fields with folding (7.3.1), compact forms
// (7.3.3), Content-Length framing (18.3, 20.14). Header values stay raw strings; structured values are
// parsed on demand (address.ts, uri.ts). Throws only SipParseError.
import { SipParseError } from '../errors.js';
import { canonicalName, Headers } from './headers.js';
import { isToken } from './syntax.js';
import type { SipMessage, SipRequest, SipResponse } from './types.js';
import { parseUri } from './uri.js';

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;
const CRLFCRLF = Buffer.from('\r\n\r\n');
const LFLF = Buffer.from('\n\n');
// RFC 3261 7.1: SIP-Version = "SIP" "/" 1*DIGIT "." 1*DIGIT
const VERSION = /^SIP\/[0-9]+\.[0-9]+$/i;
const STATUS = /^[1-6][0-9][0-9]$/;
/**
 * Largest Content-Length accepted: a body the size of the largest UDP payload (RFC 768). No SIP body needs more,
 * and it bounds what a TCP peer can make us hold for a message it has only announced.
 */
export const MAX_CONTENT_LENGTH = 65535;

export interface ParseOptions {
  /**
   * Stream transports (RFC 3261 18.3): Content-Length is mandatory and must not exceed what was given.
   * For datagrams a missing Content-Length means the body runs to the end of the datagram.
   */
  stream?: boolean;
}

/** Index of the blank line ending the headers and the length of its terminator, or -1. */
export function findHeaderEnd(buf: Buffer, from: number): { at: number; len: number } {
  const crlf = buf.indexOf(CRLFCRLF, from);
  if (crlf >= 0) return { at: crlf, len: 4 };
  const lf = buf.indexOf(LFLF, from);
  if (lf >= 0) return { at: lf, len: 2 };
  return { at: -1, len: 0 };
}

/** Parse one SIP message from a datagram or a framed stream message. Throws SipParseError. */
export function parseMessage(input: Buffer | string, opts: ParseOptions = {}): SipMessage {
  const buf = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  // RFC 3261 7.5: ignore CRLFs before the start line.
  let start = 0;
  while (start < buf.length && (buf[start] === CR || buf[start] === LF)) start++;
  if (start === buf.length) throw new SipParseError('empty message');
  const end = findHeaderEnd(buf, start);
  if (end.at < 0) throw new SipParseError('no blank line after the headers');
  const head = buf.toString('utf8', start, end.at);
  const bodyStart = end.at + end.len;

  let lineEnd = head.indexOf('\n');
  if (lineEnd < 0) lineEnd = head.length;
  const startLine = head.charCodeAt(lineEnd - 1) === CR ? head.slice(0, lineEnd - 1) : head.slice(0, lineEnd);
  const headers = new Headers();
  parseHeaderLines(head, lineEnd + 1, headers);

  const msg = parseStartLine(startLine, headers);
  const lengths = headers.getFields('Content-Length');
  const [first] = lengths;
  let length: number;
  if (first === undefined) {
    if (opts.stream)
      throw new SipParseError('Content-Length is mandatory on stream transports', 400, 'Bad Request', msg);
    length = buf.length - bodyStart;
  } else {
    const distinct = new Set(lengths.map((v) => v.trim()));
    if (distinct.size > 1) throw new SipParseError('conflicting Content-Length values', 400, 'Bad Request', msg);
    const text = first.trim();
    if (!/^[0-9]{1,9}$/.test(text)) throw new SipParseError(`bad Content-Length "${text}"`, 400, 'Bad Request', msg);
    length = Number(text);
    if (length > MAX_CONTENT_LENGTH)
      throw new SipParseError('Content-Length too large', 413, 'Request Entity Too Large', msg);
    // RFC 3261 18.3: a datagram shorter than Content-Length is discarded or answered 400.
    if (bodyStart + length > buf.length)
      throw new SipParseError('message shorter than its Content-Length', 400, 'Bad Request', msg);
  }
  // RFC 3261 18.3: octets past Content-Length in a datagram are discarded (RFC 4475 3.1.1.8).
  msg.body = buf.subarray(bodyStart, bodyStart + length);
  return msg;
}

function parseStartLine(line: string, headers: Headers): SipMessage {
  if (line.startsWith('SIP/') || line.startsWith('sip/')) {
    // RFC 3261 7.2: Status-Line = SIP-Version SP Status-Code SP Reason-Phrase CRLF
    const sp1 = line.indexOf(' ');
    const sp2 = sp1 < 0 ? -1 : line.indexOf(' ', sp1 + 1);
    const version = sp1 < 0 ? line : line.slice(0, sp1);
    const code = sp1 < 0 ? '' : line.slice(sp1 + 1, sp2 < 0 ? line.length : sp2);
    if (!VERSION.test(version)) throw new SipParseError(`bad SIP version "${version}"`);
    if (!STATUS.test(code)) throw new SipParseError(`bad status code "${code}"`);
    const reason = sp2 < 0 ? '' : line.slice(sp2 + 1);
    const res: SipResponse = {
      kind: 'response',
      version: version.toUpperCase(),
      status: Number(code),
      reason,
      headers,
      body: EMPTY,
    };
    return res;
  }
  // RFC 3261 7.1: Request-Line = Method SP Request-URI SP SIP-Version CRLF (exactly one SP each;
  // RFC 4475 3.1.2.9 and 3.1.2.10 reject extra whitespace).
  const parts = line.split(' ');
  const [method, uriText, version] = parts;
  if (parts.length !== 3 || method === undefined || uriText === undefined || version === undefined) {
    // Keep what a 400 needs when the line is recognisably a request (method first, version last).
    const [looseMethod, ...rest] = line.trim().split(/[ \t]+/);
    const looseVersion = rest.pop();
    const partial =
      looseMethod !== undefined &&
      looseVersion !== undefined &&
      rest.length > 0 &&
      isToken(looseMethod) &&
      VERSION.test(looseVersion)
        ? request(looseMethod, rest.join(' '), looseVersion, headers)
        : undefined;
    throw new SipParseError(`malformed Request-Line "${line}"`, 400, 'Bad Request', partial);
  }
  if (!isToken(method)) throw new SipParseError(`bad method "${method}"`);
  if (!VERSION.test(version)) throw new SipParseError(`bad SIP version "${version}"`);
  const partial = request(method, uriText, version, headers);
  try {
    partial.uri = parseUri(uriText);
  } catch (err) {
    if (err instanceof SipParseError)
      throw new SipParseError(`bad Request-URI: ${err.message}`, 400, 'Bad Request', partial);
    throw err;
  }
  return partial;
}

const EMPTY = Buffer.alloc(0);

/** A request whose Request-URI is not parsed yet (kept opaque). */
function request(method: string, uriText: string, version: string, headers: Headers): SipRequest {
  return {
    kind: 'request',
    method,
    uri: { scheme: 'invalid', opaque: uriText },
    version: version.toUpperCase(),
    headers,
    body: EMPTY,
  };
}

function parseHeaderLines(head: string, i: number, headers: Headers): void {
  let name = '';
  let value = '';
  while (i < head.length) {
    let nl = head.indexOf('\n', i);
    if (nl < 0) nl = head.length;
    const lineEnd = nl > i && head.charCodeAt(nl - 1) === CR ? nl - 1 : nl;
    const first = head.charCodeAt(i);
    if (first === SP || first === HTAB) {
      // RFC 3261 7.3.1: a line starting with whitespace continues the previous field (folding -> one SP).
      if (name === '') throw new SipParseError('continuation line before any header');
      value += ' ' + trimLws(head.slice(i, lineEnd));
    } else {
      if (name !== '') headers.addCanonical(name, trimLws(value));
      const colon = head.indexOf(':', i);
      if (colon < 0 || colon > lineEnd)
        throw new SipParseError(`header line without colon: "${head.slice(i, lineEnd)}"`);
      // RFC 3261 25.1: HCOLON = *( SP / HTAB ) ":" SWS
      let nameEnd = colon;
      while (nameEnd > i && (head.charCodeAt(nameEnd - 1) === SP || head.charCodeAt(nameEnd - 1) === HTAB)) nameEnd--;
      const rawName = head.slice(i, nameEnd);
      if (!isToken(rawName)) throw new SipParseError(`bad header name "${rawName}"`);
      name = canonicalName(rawName);
      value = head.slice(colon + 1, lineEnd);
    }
    i = nl + 1;
  }
  if (name !== '') headers.addCanonical(name, trimLws(value));
}

/** Trim SP and HTAB only (String.trim would also eat U+FEFF and other Unicode spaces of a value). */
function trimLws(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === SP || s.charCodeAt(a) === HTAB)) a++;
  while (b > a && (s.charCodeAt(b - 1) === SP || s.charCodeAt(b - 1) === HTAB)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}
