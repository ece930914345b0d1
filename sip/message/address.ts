// Structured header values: name-addr / addr-spec (RFC 3261 20.10, 25.1), Via (20.42), CSeq (20.16).
import { SipParseError } from '../errors.js';
import { isToken, parseDecimal, parseParams, quote, readQuoted, serializeParams, skipWs } from './syntax.js';
import type { CSeq, NameAddr, Via } from './types.js';
import { isSipUri, parseUri, serializeUri } from './uri.js';

/** RFC 3261 8.1.1.5: the CSeq sequence number MUST be less than 2**31. */
const MAX_CSEQ = 2 ** 31 - 1;
const MAX_PORT = 65535;

/**
 * Parse one name-addr or addr-spec with its header parameters (one element of a From, To, Contact, Route...).
 * RFC 3261 20.10: in the addr-spec form the URI cannot contain `,` `;` `?`; parameters after it belong to
 * the header. Throws SipParseError.
 */
export function parseNameAddr(value: string): NameAddr {
  const s = value.trim();
  if (s === '*') return { uri: { scheme: '*', opaque: '' }, params: new Map(), wildcard: true };
  let i = 0;
  let displayName: string | undefined;
  if (s[0] === '"') {
    const q = readQuoted(s, 0);
    displayName = q.text;
    i = skipWs(s, q.end);
    if (s[i] !== '<') throw new SipParseError('quoted display name without <uri>');
  } else {
    const lt = s.indexOf('<');
    if (lt >= 0) {
      const words = s.slice(0, lt).trim();
      if (words.length > 0) {
        // RFC 3261 25.1: display-name = *(token LWS) / quoted-string
        for (const w of words.split(/[ \t\r\n]+/))
          if (!isToken(w)) throw new SipParseError(`bad display name "${words}"`);
        displayName = words;
      }
      i = lt;
    }
  }
  const params = new Map<string, string | null>();
  if (s[i] === '<') {
    const gt = s.indexOf('>', i);
    if (gt < 0) throw new SipParseError('unterminated <uri>');
    const uriText = s.slice(i + 1, gt);
    if (/[\s<]/.test(uriText)) throw new SipParseError(`whitespace or < inside <${uriText}>`);
    const uri = parseUri(uriText);
    parseParams(s, gt + 1, params);
    return displayName === undefined ? { uri, params } : { displayName, uri, params };
  }
  // addr-spec: the URI runs to the first ';' (header parameters follow) and may not hold '?' or ','.
  const semi = s.indexOf(';');
  const uriText = (semi >= 0 ? s.slice(0, semi) : s).trim();
  if (/[\s?,<>"]/.test(uriText)) throw new SipParseError(`addr-spec "${uriText}" must be enclosed in <>`);
  const uri = parseUri(uriText);
  if (semi >= 0) parseParams(s, semi, params);
  return { uri, params };
}

export function serializeNameAddr(na: NameAddr): string {
  if (na.wildcard) return '*';
  let out = '';
  if (na.displayName !== undefined)
    out += isDisplayTokens(na.displayName) ? na.displayName + ' ' : quote(na.displayName) + ' ';
  out += '<' + serializeUri(na.uri) + '>';
  return out + serializeParams(na.params);
}

function isDisplayTokens(s: string): boolean {
  return s.length > 0 && s.split(' ').every(isToken);
}

/** The tag parameter of a From or To value, if any. */
export function tagOf(na: NameAddr): string | undefined {
  return na.params.get('tag') ?? undefined;
}

// RFC 3261 25.1: sent-protocol = protocol-name SLASH protocol-version SLASH transport; SLASH = SWS "/" SWS
const SENT_PROTOCOL =
  /^(?<protocol>[A-Za-z0-9\-.!%*_+`'~]+)\s*\/\s*(?<version>[A-Za-z0-9\-.!%*_+`'~]+)\s*\/\s*(?<transport>[A-Za-z0-9\-.!%*_+`'~]+)\s+/;
const VIA_HOST = /(?<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9\-.]*[A-Za-z0-9.])?)/y;

/** Parse one Via value (one element of the comma list). Throws SipParseError. */
export function parseVia(value: string): Via {
  const s = value.trim();
  const m = SENT_PROTOCOL.exec(s);
  const { protocol, version, transport } = m?.groups ?? {};
  if (!m || protocol === undefined || version === undefined || transport === undefined)
    throw new SipParseError(`bad Via "${value}"`);
  let i = m[0].length;
  VIA_HOST.lastIndex = i;
  const host = VIA_HOST.exec(s)?.groups?.host;
  if (host === undefined) throw new SipParseError(`bad Via sent-by "${value}"`);
  const via: Via = { protocol, version, transport: transport.toUpperCase(), host, params: new Map() };
  i = skipWs(s, i + host.length);
  if (s[i] === ':') {
    i = skipWs(s, i + 1);
    const start = i;
    while (i < s.length && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39) i++;
    const port = parseDecimal(s.slice(start, i), MAX_PORT);
    if (port === undefined) throw new SipParseError(`bad Via port "${value}"`);
    via.port = port;
  }
  parseParams(s, i, via.params);
  return via;
}

export function serializeVia(via: Via): string {
  const port = via.port === undefined ? '' : ':' + via.port;
  return `${via.protocol}/${via.version}/${via.transport} ${via.host}${port}${serializeParams(via.params)}`;
}

/** Branch of a Via, if any (RFC 3261 8.1.1.7). */
export function branchOf(via: Via): string | undefined {
  return via.params.get('branch') ?? undefined;
}

/** Parse a CSeq value: `1*DIGIT LWS Method` with the number below 2**31 (RFC 3261 8.1.1.5). */
export function parseCSeq(value: string): CSeq {
  const { number, method } =
    /^\s*(?<number>[0-9]{1,10})\s+(?<method>[A-Za-z0-9\-.!%*_+`'~]+)\s*$/.exec(value)?.groups ?? {};
  if (number === undefined || method === undefined) throw new SipParseError(`bad CSeq "${value}"`);
  const seq = Number(number);
  if (seq > MAX_CSEQ) throw new SipParseError(`CSeq number ${number} out of range`);
  return { seq, method };
}

export function serializeCSeq(c: CSeq): string {
  return `${c.seq} ${c.method}`;
}

/** Whether a URI is sip:/sips: (for checks that need host/port). */
export { isSipUri };
