// The numbers of a call from its INVITE: the dialled number (which agent answers) and the caller's number
// (`call_info.from_phone_number`: E.164, or `anonymous` when withheld).
import {
  fromOf,
  isSipUri,
  parseNameAddr,
  unescapeUriPart,
  type SipRequest,
  type Uri,
} from '../../sip/message/index.js';
import { E164_PATTERN } from '../schemas/common.js';

/** `call_info.from_phone_number` of a caller who withheld the number (or has none). */
export const ANONYMOUS = 'anonymous';

/** RFC 3966 3: visual-separator = "-" / "." / "(" / ")"; spaces come from display forms people type. */
const VISUAL_SEPARATORS = /[-.()\s]/g;
/** ITU-T E.164 / E.123: "00" is the international call prefix of most of the world. */
const INTERNATIONAL_PREFIX = '00';
/**
 * Digits without a `+` are taken as E.164 missing its plus (as many trunks send them) when they are that long:
 * shorter strings are extensions and national short numbers.
 */
const MIN_BARE_INTERNATIONAL_DIGITS = 8;
/** RFC 3323 4.2 `header`, RFC 3325 9.3 `id`: the caller asked that its identity be withheld. */
const WITHHOLDING_PRIVACY = new Set(['id', 'header']);
/** RFC 3323 4.1.1.3: the anonymous From (`"Anonymous" <sip:anonymous@anonymous.invalid>`). */
const ANONYMOUS_USER = 'anonymous';
const ANONYMOUS_HOST = 'anonymous.invalid';

/** A telephone number as written: E.164 when the digits allow it, else only its digits (e.g. a national number). */
interface PhoneNumber {
  e164: string | null;
  digits: string;
}

/**
 * Reads a telephone-number user part or tel: number: `+1 (415) 555-0100`, `14155550100;npdi`,
 * `5550100;phone-context=+1-415`, `0044...`, `%2B4420...`. Null when it is not a number (`alice`, `*67`).
 */
function readNumber(text: string): PhoneNumber | null {
  const [number, ...params] = unescapeUriPart(text).split(';');
  const compact = number.replace(VISUAL_SEPARATORS, '');
  if (/^\+\d+$/.test(compact)) return { e164: E164_PATTERN.test(compact) ? compact : null, digits: compact.slice(1) };
  if (!/^\d+$/.test(compact)) return null;
  // RFC 3966 5.1.5: a local number with a global-number-digits context is that prefix followed by the number.
  const context = params
    .find((p) => p.toLowerCase().startsWith('phone-context='))
    ?.slice('phone-context='.length)
    .replace(VISUAL_SEPARATORS, '');
  let candidate: string | null = null;
  if (context !== undefined && /^\+\d+$/.test(context)) candidate = context + compact;
  else if (compact.startsWith(INTERNATIONAL_PREFIX)) candidate = `+${compact.slice(INTERNATIONAL_PREFIX.length)}`;
  else if (compact.length >= MIN_BARE_INTERNATIONAL_DIGITS) candidate = `+${compact}`;
  return { e164: candidate !== null && E164_PATTERN.test(candidate) ? candidate : null, digits: compact };
}

/** The telephone number a URI names: a sip:/sips: user part or a tel: URI (RFC 3966). */
function numberOfUri(uri: Uri): PhoneNumber | null {
  if (isSipUri(uri)) return uri.user === undefined ? null : readNumber(uri.user);
  if (uri.scheme === 'tel') return readNumber(uri.opaque);
  return null;
}

/** E.164 form of a number as a trunk or a person writes it, or null when the digits do not make one. */
export function toE164(text: string): string | null {
  return readNumber(text.startsWith('tel:') ? text.slice('tel:'.length) : text)?.e164 ?? null;
}

/**
 * The number the caller dialled, in E.164: the Request-URI's user part, else the To URI's (RFC 3261 8.2.2.1:
 * the Request-URI is what the request is for; a proxy may have left a non-number there). Null when neither
 * holds an E.164 number.
 */
export function dialledNumber(req: SipRequest): string | null {
  const fromRequestUri = numberOfUri(req.uri);
  if (fromRequestUri !== null) return fromRequestUri.e164;
  const to = req.headers.get('To');
  return to === undefined ? null : (numberOfUri(parseNameAddr(to).uri)?.e164 ?? null);
}

function isAnonymousUri(uri: Uri): boolean {
  if (isSipUri(uri)) {
    return (
      uri.user === undefined || uri.user.toLowerCase() === ANONYMOUS_USER || uri.host.toLowerCase() === ANONYMOUS_HOST
    );
  }
  return uri.scheme === 'tel' ? !/\d/.test(uri.opaque) : true;
}

function withheld(req: SipRequest): boolean {
  for (const value of req.headers.getAll('Privacy')) {
    // RFC 3323 4.2: Privacy = priv-value *(";" priv-value)
    for (const v of value.split(';')) if (WITHHOLDING_PRIVACY.has(v.trim().toLowerCase())) return true;
  }
  return false;
}

/** The first P-Asserted-Identity value naming a number (RFC 3325 9.1: at most one sip/sips and one tel). */
function assertedNumber(req: SipRequest): PhoneNumber | null {
  let fallback: PhoneNumber | null = null;
  for (const value of req.headers.getAll('P-Asserted-Identity')) {
    let uri: Uri;
    try {
      uri = parseNameAddr(value).uri;
    } catch {
      continue; // an unreadable identity asserts nothing; From still names the caller
    }
    const n = numberOfUri(uri);
    if (n?.e164) return n;
    fallback ??= n;
  }
  return fallback;
}

/**
 * The caller's number for `call_info.from_phone_number`: `anonymous` when withheld (Privacy `id` or `header`, an
 * anonymous From, no user part) or when the caller's identity is not a telephone number (`sip:alice@...`); else
 * E.164, or the digits as sent when they cannot be made E.164 (a national number). P-Asserted-Identity is read
 * first when the trunk is trusted to assert identities (RFC 3325 9.1).
 */
export function callerNumber(req: SipRequest, opts: { trustAssertedIdentity: boolean }): string {
  if (withheld(req)) return ANONYMOUS;
  if (opts.trustAssertedIdentity) {
    const asserted = assertedNumber(req);
    if (asserted) return asserted.e164 ?? asserted.digits;
  }
  const from = fromOf(req).uri;
  if (isAnonymousUri(from)) return ANONYMOUS;
  const n = numberOfUri(from);
  if (n === null) return ANONYMOUS;
  return n.e164 ?? n.digits;
}
