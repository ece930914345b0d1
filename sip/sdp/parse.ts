// SDP parser and serializer (RFC 4566). Lenient in what it accepts (LF or CRLF line ends, unknown
// line types kept verbatim), strict about the lines offer/answer depends on (v, o, c, m).

import type { AddrType, Attribute, Connection, MediaDescription, Origin, SessionDescription } from './types.js';

/** A description that cannot be read; the UA answers 400 (or 488 in an offer/answer exchange). */
export class SdpParseError extends Error {
  constructor(message: string, readonly line: number) {
    super(`SDP line ${line}: ${message}`);
    this.name = 'SdpParseError';
  }
}

// RFC 4566 5: "<type>=<value>", type is exactly one case-significant character.
const LINE = /^([a-z])=(.*)$/;

function addrType(value: string, line: number): AddrType {
  if (value === 'IP4' || value === 'IP6') return value;
  throw new SdpParseError(`unsupported address type "${value}"`, line);
}

function parseConnection(value: string, line: number): Connection {
  const parts = value.split(' ');
  if (parts.length !== 3) throw new SdpParseError('c= needs 3 fields', line);
  // RFC 4566 5.7: a multicast IPv4 address may carry "/ttl[/count]"; keep the address part.
  return { netType: parts[0], addrType: addrType(parts[1], line), address: parts[2].split('/')[0] };
}

function parseOrigin(value: string, line: number): Origin {
  const p = value.split(' ');
  if (p.length !== 6) throw new SdpParseError('o= needs 6 fields', line);
  return {
    username: p[0], sessionId: p[1], sessionVersion: p[2], netType: p[3], addrType: addrType(p[4], line), address: p[5],
  };
}

function parseAttribute(value: string): Attribute {
  const colon = value.indexOf(':');
  return colon < 0 ? { name: value, value: null } : { name: value.slice(0, colon), value: value.slice(colon + 1) };
}

function parseMedia(value: string, line: number): MediaDescription {
  const p = value.split(' ').filter((s) => s.length > 0);
  if (p.length < 3) throw new SdpParseError('m= needs media, port and proto', line);
  const [portText, countText] = p[1].split('/');
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) throw new SdpParseError(`bad media port "${p[1]}"`, line);
  return {
    media: p[0],
    port,
    portCount: countText === undefined ? null : Number(countText),
    proto: p[2],
    formats: p.slice(3),
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
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i];
    if (raw.length === 0) continue;
    const m = LINE.exec(raw);
    if (!m) throw new SdpParseError(`not a "<type>=<value>" line: ${JSON.stringify(raw.slice(0, 40))}`, i + 1);
    const [, type, value] = m;
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
  for (const line of s.otherLines) if (line[0] !== 'b' && line[0] !== 'z' && line[0] !== 'k' && line[0] !== 'r') out.push(line);
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
