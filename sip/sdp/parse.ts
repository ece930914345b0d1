// SDP parser and serializer (RFC 4566). Lenient in what it accepts (LF or CRLF line ends, unknown
// line types kept verbatim), strict about the lines offer/answer depends on (v, o, c, m).

import type { AddrType, Attribute, Connection, MediaDescription, Origin, SessionDescription } from './types.js';

/** A description that cannot be read; the UA answers 400 (or 488 in an offer/answer exchange). */
export class SdpParseError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(`SDP line ${line}: ${message}`);
    this.name = 'SdpParseError';
  }
}

// RFC 4566 5: "<type>=<value>", type is exactly one case-significant character.
const LINE = /^[a-z]=/;

/** n strings: what fieldsOf returns. */
type Fields<N extends number, F extends string[] = []> = F['length'] extends N ? F : Fields<N, [...F, string]>;

/** The n space-separated fields of a line's value, or a SdpParseError naming the line type. */
function fieldsOf<N extends number>(value: string, n: N, type: string, line: number): Fields<N> {
  const parts = value.split(' ');
  if (parts.length !== n) throw new SdpParseError(`${type}= needs ${n} fields`, line);
  return parts as Fields<N>;
}

/** The part of a field before its first '/' (split always returns at least one element). */
function beforeSlash(field: string): string {
  return field.split('/', 1)[0]!;
}

function addrType(value: string, line: number): AddrType {
  if (value === 'IP4' || value === 'IP6') return value;
  throw new SdpParseError(`unsupported address type "${value}"`, line);
}

function parseConnection(value: string, line: number): Connection {
  const [netType, type, address] = fieldsOf(value, 3, 'c', line);
  // RFC 4566 5.7: a multicast IPv4 address may carry "/ttl[/count]"; keep the address part.
  return { netType, addrType: addrType(type, line), address: beforeSlash(address) };
}

function parseOrigin(value: string, line: number): Origin {
  const [username, sessionId, sessionVersion, netType, type, address] = fieldsOf(value, 6, 'o', line);
  return { username, sessionId, sessionVersion, netType, addrType: addrType(type, line), address };
}

function parseAttribute(value: string): Attribute {
  const colon = value.indexOf(':');
  return colon < 0 ? { name: value, value: null } : { name: value.slice(0, colon), value: value.slice(colon + 1) };
}

function parseMedia(value: string, line: number): MediaDescription {
  const [media, portField, proto, ...formats] = value.split(' ').filter((s) => s.length > 0);
  if (media === undefined || portField === undefined || proto === undefined) {
    throw new SdpParseError('m= needs media, port and proto', line);
  }
  const [portText = '', countText] = portField.split('/');
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) throw new SdpParseError(`bad media port "${portField}"`, line);
  return {
    media,
    port,
    portCount: countText === undefined ? null : Number(countText),
    proto,
    formats,
    connection: null,
    otherLines: [],
    attributes: [],
  };
}

export function parseSdp(text: string): SessionDescription {
  const lines = text.split(/\r?\n/);
  let version: number | null = null;
  let origin: Origin | null = null;
  let sessionName = '-';
  const session: SessionDescription = {
    version: 0,
    origin: { username: '-', sessionId: '0', sessionVersion: '0', netType: 'IN', addrType: 'IP4', address: '0.0.0.0' },
    sessionName,
    connection: null,
    timing: [],
    otherLines: [],
    attributes: [],
    media: [],
  };
  let current: MediaDescription | null = null;
  for (const [i, raw] of lines.entries()) {
    if (raw.length === 0) continue;
    if (!LINE.test(raw))
      throw new SdpParseError(`not a "<type>=<value>" line: ${JSON.stringify(raw.slice(0, 40))}`, i + 1);
    const type = raw.charAt(0);
    const value = raw.slice(2);
    switch (type) {
      case 'v':
        if (value !== '0') throw new SdpParseError(`unsupported version "${value}"`, i + 1); // RFC 4566 5.1
        version = 0;
        break;
      case 'o':
        origin = parseOrigin(value, i + 1);
        break;
      case 's':
        sessionName = value;
        break;
      case 't':
        session.timing.push(value);
        break;
      case 'c':
        if (current) current.connection = parseConnection(value, i + 1);
        else session.connection = parseConnection(value, i + 1);
        break;
      case 'a':
        (current ? current.attributes : session.attributes).push(parseAttribute(value));
        break;
      case 'm':
        current = parseMedia(value, i + 1);
        session.media.push(current);
        break;
      default:
        (current ? current.otherLines : session.otherLines).push(`${type}=${value}`);
    }
  }
  if (version === null) throw new SdpParseError('missing v= line', 1);
  if (origin === null) throw new SdpParseError('missing o= line', 1);
  session.origin = origin;
  session.sessionName = sessionName;
  // RFC 4566 5.7: every media needs a connection, at session or media level.
  for (const media of session.media) {
    if (media.port !== 0 && !media.connection && !session.connection) {
      throw new SdpParseError(`m=${media.media} has no c= line at session or media level`, 1);
    }
  }
  return session;
}

function connectionLine(c: Connection): string {
  return `c=${c.netType} ${c.addrType} ${c.address}`;
}

function attributeLine(a: Attribute): string {
  return a.value === null ? `a=${a.name}` : `a=${a.name}:${a.value}`;
}

/** Serialize in the RFC 4566 5 line order, CRLF line ends, final CRLF. */
export function serializeSdp(s: SessionDescription): string {
  const o = s.origin;
  const out: string[] = [
    'v=0',
    `o=${o.username} ${o.sessionId} ${o.sessionVersion} ${o.netType} ${o.addrType} ${o.address}`,
    `s=${s.sessionName}`,
  ];
  for (const line of s.otherLines)
    if (line[0] !== 'b' && line[0] !== 'z' && line[0] !== 'k' && line[0] !== 'r') out.push(line);
  if (s.connection) out.push(connectionLine(s.connection));
  for (const line of s.otherLines) if (line[0] === 'b') out.push(line);
  for (const t of s.timing.length > 0 ? s.timing : ['0 0']) out.push(`t=${t}`);
  for (const line of s.otherLines) if (line[0] === 'r' || line[0] === 'z' || line[0] === 'k') out.push(line);
  for (const a of s.attributes) out.push(attributeLine(a));
  for (const m of s.media) {
    const port = m.portCount === null ? `${m.port}` : `${m.port}/${m.portCount}`;
    out.push(`m=${m.media} ${port} ${m.proto}${m.formats.length > 0 ? ' ' + m.formats.join(' ') : ''}`);
    for (const line of m.otherLines) if (line[0] === 'i') out.push(line);
    if (m.connection) out.push(connectionLine(m.connection));
    for (const line of m.otherLines) if (line[0] !== 'i') out.push(line);
    for (const a of m.attributes) out.push(attributeLine(a));
  }
  return out.join('\r\n') + '\r\n';
}
