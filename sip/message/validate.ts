// Checks a UAS applies to a parsed request before processing it, mapped to the response it deserves
// (RFC 3261 8.2.1-8.2.3, 16.3; RFC 4475): 400, 416, 420, 415, 483, 505. And the sanity checks a UAC
// applies to a response before handing it up (RFC 3261 8.1.3.1, RFC 4475 3.1.2.5 and 3.1.2.19).
import { SipParseError } from '../errors.js';
import { parseCSeq, parseNameAddr, parseVia } from './address.js';
import { isToken, parseDecimal } from './syntax.js';
import type { SipRequest, SipResponse } from './types.js';
import { isSipUri } from './uri.js';

export interface Rejection {
  status: number;
  reason: string;
  detail: string;
  /** For 420: the option tags to list in Unsupported (RFC 3261 8.2.2.3). */
  unsupported?: string[];
}

export interface ValidateOptions {
  /** Option tags this UAS supports; a Require naming another is rejected with 420 (RFC 3261 8.2.2.3). */
  supported?: readonly string[];
  /** URI schemes accepted in the Request-URI (RFC 3261 8.2.2.1), default sip and sips. */
  schemes?: readonly string[];
  /** Content types accepted in a body; a body of another type is rejected with 415 (RFC 3261 8.2.3). */
  acceptedContentTypes?: readonly string[];
  /** The element would forward the request: Max-Forwards 0 is then 483 (RFC 3261 16.3 step 3). */
  forwarding?: boolean;
}

/** RFC 3261 7.3.1, 20: header fields that appear at most once. */
const SINGLE_VALUED = ['To', 'From', 'Call-ID', 'CSeq', 'Max-Forwards', 'Content-Length', 'Content-Type', 'Expires'];
/** RFC 3261 8.1.1: the header fields every request carries (Max-Forwards tolerated absent: RFC 2543 peers). */
const MANDATORY = ['To', 'From', 'CSeq', 'Call-ID', 'Via'];
/** RFC 3261 20.22: Max-Forwards is an integer in 0-255. */
const MAX_MAX_FORWARDS = 255;
/** RFC 3261 20.19, 20.33: delta-seconds up to 2**32-1. */
const MAX_DELTA_SECONDS = 2 ** 32 - 1;
// RFC 3261 25.1: callid = word [ "@" word ]; word = 1*(alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~" / "(" / ")" / "<" / ">" / ":" / "\" / DQUOTE / "/" / "[" / "]" / "?" / "{" / "}")
const CALL_ID = /^[A-Za-z0-9\-.!%*_+`'~()<>:\\"/[\]?{}]+(?:@[A-Za-z0-9\-.!%*_+`'~()<>:\\"/[\]?{}]+)?$/;
// RFC 3261 20.17, 25.1: rfc1123-date with "GMT"
const DATE =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$/;

function bad(detail: string): Rejection {
  return { status: 400, reason: 'Bad Request', detail };
}

/** Run a structured parse; a SipParseError becomes its message. */
function tryParse(fn: () => void): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    if (err instanceof SipParseError) return err.message;
    throw err;
  }
}

/** The response a UAS owes a request that must not be processed, or null if it may proceed. */
export function validateRequest(req: SipRequest, opts: ValidateOptions = {}): Rejection | null {
  // RFC 3261 8.2.1 / 21.5.20: a version we do not speak.
  if (req.version !== 'SIP/2.0') return { status: 505, reason: 'Version Not Supported', detail: req.version };
  for (const name of MANDATORY) if (!req.headers.has(name)) return bad(`missing ${name}`);
  for (const name of SINGLE_VALUED) if (req.headers.count(name) > 1) return bad(`more than one ${name}`);

  for (const v of req.headers.getAll('Via')) {
    const err = tryParse(() => parseVia(v));
    if (err) return bad(`Via: ${err}`);
  }
  for (const name of ['From', 'To']) {
    const err = tryParse(() => parseNameAddr(req.headers.get(name)!));
    if (err) return bad(`${name}: ${err}`);
  }
  for (const name of ['Contact', 'Route', 'Record-Route']) {
    for (const v of req.headers.getAll(name)) {
      const err = tryParse(() => parseNameAddr(v));
      if (err) return bad(`${name}: ${err}`);
    }
  }
  const callId = req.headers.get('Call-ID')!.trim();
  if (!CALL_ID.test(callId)) return bad(`bad Call-ID "${callId}"`);
  let cseqMethod = '';
  const cseqErr = tryParse(() => {
    cseqMethod = parseCSeq(req.headers.get('CSeq')!).method;
  });
  if (cseqErr) return bad(cseqErr);
  // RFC 3261 8.1.1.5 / RFC 4475 3.1.2.17-18: the CSeq method matches the request method.
  if (cseqMethod !== req.method) return bad(`CSeq method ${cseqMethod} does not match ${req.method}`);
  const mf = req.headers.get('Max-Forwards');
  let maxForwards: number | undefined;
  if (mf !== undefined) {
    maxForwards = parseDecimal(mf.trim(), MAX_MAX_FORWARDS);
    if (maxForwards === undefined) return bad(`bad Max-Forwards "${mf}"`);
  }
  const date = req.headers.get('Date');
  if (date !== undefined && !DATE.test(date.trim())) return bad(`bad Date "${date}"`);

  // RFC 3261 8.2.2.1: a Request-URI scheme we do not understand.
  const schemes = opts.schemes ?? ['sip', 'sips'];
  if (!schemes.includes(req.uri.scheme)) {
    return { status: 416, reason: 'Unsupported URI Scheme', detail: `scheme ${req.uri.scheme}` };
  }
  // RFC 3261 19.1.5 / RFC 4475 3.1.2.11: headers are not allowed in a Request-URI.
  if (isSipUri(req.uri) && req.uri.headers.length > 0) return bad('headers in the Request-URI');

  // RFC 3261 16.3 step 3: an element that would forward with Max-Forwards 0 answers 483.
  if (opts.forwarding && maxForwards === 0 && req.method !== 'OPTIONS') {
    return { status: 483, reason: 'Too Many Hops', detail: 'Max-Forwards is 0' };
  }
  // RFC 3261 8.2.2.3: Require with unknown option tags is rejected, except on ACK and CANCEL.
  if (req.method !== 'ACK' && req.method !== 'CANCEL') {
    const supported = new Set((opts.supported ?? []).map((s) => s.toLowerCase()));
    const unsupported = req.headers.getAll('Require').filter((t) => t !== '' && !supported.has(t.toLowerCase()));
    if (unsupported.length > 0)
      return { status: 420, reason: 'Bad Extension', detail: unsupported.join(', '), unsupported };
  }
  // RFC 3261 8.2.3: a body of a type we do not understand.
  if (opts.acceptedContentTypes && req.body.length > 0) {
    const contentType = req.headers.get('Content-Type') ?? '';
    const semicolon = contentType.indexOf(';');
    const type = (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
    if (!opts.acceptedContentTypes.map((t) => t.toLowerCase()).includes(type)) {
      return { status: 415, reason: 'Unsupported Media Type', detail: `Content-Type ${type || '(none)'}` };
    }
  }
  return null;
}

/**
 * Why a received response must be discarded, or null if it is usable (RFC 3261 8.1.3.1, 18.1.2):
 * malformed Via/CSeq/From/To/Call-ID or scalar fields out of range (RFC 4475 3.1.2.5).
 */
export function validateResponse(res: SipResponse): string | null {
  if (res.version !== 'SIP/2.0') return `version ${res.version}`;
  for (const name of MANDATORY) if (!res.headers.has(name)) return `missing ${name}`;
  for (const name of SINGLE_VALUED) if (res.headers.count(name) > 1) return `more than one ${name}`;
  for (const v of res.headers.getAll('Via')) {
    const err = tryParse(() => parseVia(v));
    if (err) return `Via: ${err}`;
  }
  for (const name of ['From', 'To']) {
    const err = tryParse(() => parseNameAddr(res.headers.get(name)!));
    if (err) return `${name}: ${err}`;
  }
  const cseqErr = tryParse(() => parseCSeq(res.headers.get('CSeq')!));
  if (cseqErr) return cseqErr;
  const retryAfter = res.headers.get('Retry-After');
  if (retryAfter !== undefined) {
    const delta = /^[^\s;(]*/.exec(retryAfter.trim())?.[0] ?? '';
    if (parseDecimal(delta, MAX_DELTA_SECONDS) === undefined) return `bad Retry-After "${retryAfter}"`;
  }
  for (const w of res.headers.getAll('Warning')) {
    // RFC 3261 20.43: warn-code = 3DIGIT
    const { code, agent } = /^(?<code>[0-9]+)\s+(?<agent>\S+)\s+"/.exec(w)?.groups ?? {};
    if (code?.length !== 3 || agent === undefined || !isToken(agent.replace(/[:[\]]/g, '')))
      return `bad Warning "${w}"`;
  }
  const callId = res.headers.get('Call-ID')!.trim();
  if (!CALL_ID.test(callId)) return `bad Call-ID "${callId}"`;
  return null;
}
