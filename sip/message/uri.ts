// SIP and other URIs (RFC 3261 19.1, 25.1): parse, serialize, compare.
import { SipParseError } from '../errors.js';
import { parseDecimal, serializeParams } from './syntax.js';
import type { OtherUri, Params, SipUri, Uri } from './types.js';

// RFC 3261 25.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
const SCHEME = /^[A-Za-z][A-Za-z0-9+\-.]*$/;
// user = 1*( unreserved / escaped / user-unreserved ); password = *( unreserved / escaped / & = + $ , )
const USER = /^(?:[A-Za-z0-9\-_.!~*'()&=+$,;?/]|%[0-9A-Fa-f]{2})+$/;
const PASSWORD = /^(?:[A-Za-z0-9\-_.!~*'()&=+$,]|%[0-9A-Fa-f]{2})*$/;
// hostname / IPv4address (RFC 3261 25.1)
const HOSTNAME = /^[A-Za-z0-9](?:[A-Za-z0-9\-.]*[A-Za-z0-9.])?$/;
const IPV6_REF = /^\[[0-9A-Fa-f:.]+\]$/;
// paramchar = param-unreserved / unreserved / escaped; param-unreserved = [ ] / : & + $
const PARAM = /^(?:[A-Za-z0-9\-_.!~*'()[\]/:&+$]|%[0-9A-Fa-f]{2})+$/;
// hname / hvalue: hnv-unreserved = [ ] / ? : + $
const HNAME = /^(?:[A-Za-z0-9\-_.!~*'()[\]/?:+$]|%[0-9A-Fa-f]{2})+$/;
const HVALUE = /^(?:[A-Za-z0-9\-_.!~*'()[\]/?:+$]|%[0-9A-Fa-f]{2})*$/;
// absoluteURI opaque part: uric = reserved / unreserved / escaped, no whitespace or delimiters
const OPAQUE = /^[^\s<>"]*$/;

const MAX_PORT = 65535;

export function isSipUri(uri: Uri): uri is SipUri {
  return uri.scheme === 'sip' || uri.scheme === 'sips';
}

/** Parse a URI. sip:/sips: are parsed fully; other schemes are kept opaque. Throws SipParseError. */
export function parseUri(text: string): Uri {
  const colon = text.indexOf(':');
  if (colon <= 0) throw new SipParseError(`not a URI: "${text}"`);
  const scheme = text.slice(0, colon);
  if (!SCHEME.test(scheme)) throw new SipParseError(`bad URI scheme "${scheme}"`);
  const lower = scheme.toLowerCase();
  if (lower !== 'sip' && lower !== 'sips') {
    const opaque = text.slice(colon + 1);
    if (!OPAQUE.test(opaque)) throw new SipParseError(`bad ${scheme} URI`);
    return { scheme: lower, opaque } satisfies OtherUri;
  }
  return parseSipUriRest(lower, text, colon + 1);
}

function parseSipUriRest(scheme: 'sip' | 'sips', text: string, start: number): SipUri {
  const uri: SipUri = { scheme, host: '', params: new Map(), headers: [] };
  let i = start;
  const at = text.indexOf('@', i);
  if (at >= 0) {
    const userinfo = text.slice(i, at);
    const pc = userinfo.indexOf(':');
    const user = pc >= 0 ? userinfo.slice(0, pc) : userinfo;
    if (!USER.test(user)) throw new SipParseError(`bad user part in "${text}"`);
    uri.user = user;
    if (pc >= 0) {
      const password = userinfo.slice(pc + 1);
      if (!PASSWORD.test(password)) throw new SipParseError(`bad password in "${text}"`);
      uri.password = password;
    }
    i = at + 1;
  }
  // hostport
  let hostEnd: number;
  if (text[i] === '[') {
    hostEnd = text.indexOf(']', i);
    if (hostEnd < 0) throw new SipParseError(`unterminated IPv6 reference in "${text}"`);
    hostEnd++;
  } else {
    hostEnd = i;
    while (hostEnd < text.length && !':;?'.includes(text.charAt(hostEnd))) hostEnd++;
  }
  const host = text.slice(i, hostEnd);
  if (!(IPV6_REF.test(host) || HOSTNAME.test(host))) throw new SipParseError(`bad host in "${text}"`);
  uri.host = host;
  i = hostEnd;
  if (text[i] === ':') {
    let end = i + 1;
    while (end < text.length && text[end] !== ';' && text[end] !== '?') end++;
    const port = parseDecimal(text.slice(i + 1, end), MAX_PORT);
    if (port === undefined) throw new SipParseError(`bad port in "${text}"`);
    uri.port = port;
    i = end;
  }
  // uri-parameters
  const q = text.indexOf('?', i);
  const paramText = text.slice(i, q >= 0 ? q : text.length);
  if (paramText.length > 0) parseUriParams(paramText, uri.params, text);
  if (q >= 0) {
    for (const pair of text.slice(q + 1).split('&')) {
      const eq = pair.indexOf('=');
      const name = eq >= 0 ? pair.slice(0, eq) : pair;
      const value = eq >= 0 ? pair.slice(eq + 1) : '';
      if (!HNAME.test(name) || !HVALUE.test(value)) throw new SipParseError(`bad URI header in "${text}"`);
      uri.headers.push([name, value]);
    }
  }
  return uri;
}

function parseUriParams(s: string, params: Params, text: string): void {
  // s starts with ';'
  for (const part of s.slice(1).split(';')) {
    const eq = part.indexOf('=');
    const name = eq >= 0 ? part.slice(0, eq) : part;
    if (!PARAM.test(name)) throw new SipParseError(`bad URI parameter in "${text}"`);
    if (eq >= 0) {
      const value = part.slice(eq + 1);
      if (!PARAM.test(value)) throw new SipParseError(`bad URI parameter value in "${text}"`);
      params.set(name.toLowerCase(), value);
    } else params.set(name.toLowerCase(), null);
  }
}

export function serializeUri(uri: Uri): string {
  if (!isSipUri(uri)) return `${uri.scheme}:${uri.opaque}`;
  let out = uri.scheme + ':';
  if (uri.user !== undefined) {
    out += uri.user;
    if (uri.password !== undefined) out += ':' + uri.password;
    out += '@';
  }
  out += uri.host;
  if (uri.port !== undefined) out += ':' + uri.port;
  out += serializeParams(uri.params);
  if (uri.headers.length > 0) out += '?' + uri.headers.map(([n, v]) => `${n}=${v}`).join('&');
  return out;
}

/** Decode %HH escapes (RFC 3261 19.1.2); malformed escapes are left as they are. */
export function unescapeUriPart(s: string): string {
  if (!s.includes('%')) return s;
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '%' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else for (const b of Buffer.from(s.charAt(i), 'utf8')) bytes.push(b);
  }
  return Buffer.from(bytes).toString('utf8');
}

/** A SIP URI from its parts, for building requests. */
export function sipUri(
  host: string,
  opts: { user?: string; port?: number; scheme?: 'sip' | 'sips'; params?: Record<string, string | null> } = {},
): SipUri {
  return {
    scheme: opts.scheme ?? 'sip',
    user: opts.user,
    host: host.includes(':') && !host.startsWith('[') ? `[${host}]` : host,
    port: opts.port,
    params: new Map(Object.entries(opts.params ?? {}).map(([k, v]) => [k.toLowerCase(), v])),
    headers: [],
  };
}

/**
 * URI equality of RFC 3261 19.1.4: user, password case-sensitive after unescaping; host case-insensitive;
 * the transport, user, ttl, method and maddr parameters must match when either has them; other
 * parameters only when both have them; headers must match. Other schemes compare opaque text.
 */
export function uriEquals(a: Uri, b: Uri): boolean {
  if (a.scheme !== b.scheme) return false;
  if (!isSipUri(a) || !isSipUri(b)) return (a as OtherUri).opaque === (b as OtherUri).opaque;
  if (unescapeUriPart(a.user ?? '') !== unescapeUriPart(b.user ?? '')) return false;
  if (unescapeUriPart(a.password ?? '') !== unescapeUriPart(b.password ?? '')) return false;
  if (a.host.toLowerCase() !== b.host.toLowerCase() || a.port !== b.port) return false;
  for (const k of ['transport', 'user', 'ttl', 'method', 'maddr']) {
    if ((a.params.has(k) || b.params.has(k)) && a.params.get(k)?.toLowerCase() !== b.params.get(k)?.toLowerCase())
      return false;
  }
  for (const [k, v] of a.params) {
    if (b.params.has(k) && (b.params.get(k) ?? '').toLowerCase() !== (v ?? '').toLowerCase()) return false;
  }
  if (a.headers.length !== b.headers.length) return false;
  const bh = new Map(b.headers.map(([n, v]) => [n.toLowerCase(), unescapeUriPart(v)]));
  return a.headers.every(([n, v]) => bh.get(n.toLowerCase()) === unescapeUriPart(v));
}
