// Reading the audio parameters of one m= line: codecs from static payload types and rtpmap/fmtp,
// the direction attribute, ptime, hold (RFC 3264 8.4 and the legacy c=0.0.0.0 form).

import { DIRECTIONS, type Codec, type Direction, type MediaDescription, type SessionDescription } from './types.js';

// RFC 3551 6 (table 4): the static audio payload types a G.711 gateway understands.
export const STATIC_PAYLOAD_TYPES: Readonly<Record<number, { name: string; clockRate: number }>> = {
  0: { name: 'PCMU', clockRate: 8000 },
  8: { name: 'PCMA', clockRate: 8000 },
};
export const TELEPHONE_EVENT = 'telephone-event'; // RFC 4733 7.1.1
// RFC 4733 2.3.1: without an fmtp the receiver supports events 0-15 (the DTMF digits).
export const TELEPHONE_EVENT_DEFAULT_EVENTS = '0-15';
export const DEFAULT_PTIME_MS = 20; // RFC 3551 4.5: G.711 default packetization
/** RFC 4566 5.7 / RFC 3264 8.4: the legacy (RFC 2543) hold address. */
export const LEGACY_HOLD_ADDRESSES = ['0.0.0.0', '::'];

export function attributeValues(media: MediaDescription, name: string): string[] {
  const out: string[] = [];
  for (const a of media.attributes) if (a.name === name && a.value !== null) out.push(a.value);
  return out;
}

/** Codecs of an m= line in the order it lists them (static types without rtpmap included). */
export function codecsOf(media: MediaDescription): Codec[] {
  const rtpmap = new Map<number, { name: string; clockRate: number; channels: number }>();
  for (const value of attributeValues(media, 'rtpmap')) {
    // RFC 4566 6: a=rtpmap:<payload type> <encoding name>/<clock rate>[/<encoding parameters>]
    const m = /^(?<pt>\d+)\s+(?<name>[^/\s]+)\/(?<rate>\d+)(?:\/(?<channels>\d+))?/.exec(value)?.groups;
    if (m?.pt && m.name && m.rate) {
      rtpmap.set(Number(m.pt), {
        name: m.name,
        clockRate: Number(m.rate),
        channels: m.channels ? Number(m.channels) : 1,
      });
    }
  }
  const fmtp = new Map<number, string>();
  for (const value of attributeValues(media, 'fmtp')) {
    const m = /^(?<pt>\d+)\s+(?<params>.*)$/.exec(value)?.groups;
    if (m?.pt && m.params !== undefined) fmtp.set(Number(m.pt), m.params.trim());
  }
  const codecs: Codec[] = [];
  for (const format of media.formats) {
    if (!/^\d+$/.test(format)) continue;
    const pt = Number(format);
    const known = STATIC_PAYLOAD_TYPES[pt];
    const mapped = rtpmap.get(pt) ?? (known ? { ...known, channels: 1 } : null);
    if (!mapped) continue;
    codecs.push({
      payloadType: pt,
      name: mapped.name,
      clockRate: mapped.clockRate,
      channels: mapped.channels,
      fmtp: fmtp.get(pt) ?? null,
    });
  }
  return codecs;
}

/** RFC 4566 6: a media-level direction attribute wins over the session-level one; default sendrecv. */
export function directionOf(media: MediaDescription, session: SessionDescription): Direction {
  for (const a of media.attributes) if ((DIRECTIONS as readonly string[]).includes(a.name)) return a.name as Direction;
  for (const a of session.attributes)
    if ((DIRECTIONS as readonly string[]).includes(a.name)) return a.name as Direction;
  return 'sendrecv';
}

export function connectionAddress(media: MediaDescription, session: SessionDescription): string | null {
  return (media.connection ?? session.connection)?.address ?? null;
}

/** What the other side's direction means for ours (RFC 3264 6.1). */
export function reverseDirection(d: Direction): Direction {
  return d === 'sendonly' ? 'recvonly' : d === 'recvonly' ? 'sendonly' : d;
}

/** Combine two wishes: we send only if both allow it, and receive likewise. */
export function intersectDirection(a: Direction, b: Direction): Direction {
  const send = canSend(a) && canSend(b);
  const recv = canReceive(a) && canReceive(b);
  return send && recv ? 'sendrecv' : send ? 'sendonly' : recv ? 'recvonly' : 'inactive';
}

export function canSend(d: Direction): boolean {
  return d === 'sendrecv' || d === 'sendonly';
}

export function canReceive(d: Direction): boolean {
  return d === 'sendrecv' || d === 'recvonly';
}

/**
 * The remote side's effective direction: its attribute, narrowed to "sendonly" by the legacy hold
 * address (RFC 3264 8.4: c=0.0.0.0 means "do not send to me").
 */
export function effectiveRemoteDirection(media: MediaDescription, session: SessionDescription): Direction {
  const d = directionOf(media, session);
  const address = connectionAddress(media, session);
  if (address !== null && LEGACY_HOLD_ADDRESSES.includes(address)) return canSend(d) ? 'sendonly' : 'inactive';
  return d;
}

/** The remote side put the call on hold: it will not receive (sendonly/inactive or c=0.0.0.0). */
export function isHold(media: MediaDescription, session: SessionDescription): boolean {
  return !canReceive(effectiveRemoteDirection(media, session));
}

export function ptimeOf(media: MediaDescription): number | null {
  const v = attributeValues(media, 'ptime')[0];
  if (v === undefined) return null;
  const n = Number(v);
  return Number.isFinite(n) && n > 0 ? n : null;
}

/** Parse an RFC 4733 event list ("0-15,66") into a set of event codes. */
export function parseEventList(list: string): Set<number> {
  const out = new Set<number>();
  for (const part of list.split(',')) {
    const m = /^\s*(\d+)(?:-(\d+))?\s*$/.exec(part);
    if (!m) continue;
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    for (let e = lo; e <= Math.min(hi, 255); e++) out.add(e);
  }
  return out;
}

/** Format a set of event codes as ranges ("0-16"). */
export function formatEventList(events: Set<number>): string {
  const runs: Array<[number, number]> = [];
  for (const e of [...events].sort((a, b) => a - b)) {
    const last = runs.at(-1);
    if (last !== undefined && e === last[1] + 1) last[1] = e;
    else runs.push([e, e]);
  }
  return runs.map(([lo, hi]) => (lo === hi ? `${lo}` : `${lo}-${hi}`)).join(',');
}
