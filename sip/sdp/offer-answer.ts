// SDP offer/answer (RFC 3264) for one G.711 audio stream with RFC 4733 telephone-event.
// The answerer keeps what both sides support in the offerer's order; an offer with no usable audio
// stream is rejected with a typed result the UA turns into 488 Not Acceptable Here.

import {
  DEFAULT_PTIME_MS,
  TELEPHONE_EVENT,
  TELEPHONE_EVENT_DEFAULT_EVENTS,
  codecsOf,
  connectionAddress,
  effectiveRemoteDirection,
  formatEventList,
  intersectDirection,
  isHold,
  parseEventList,
  ptimeOf,
  reverseDirection,
} from './media.js';
import type { AddrType, Attribute, Codec, Direction, MediaDescription, SessionDescription } from './types.js';

export type AudioCodecName = 'PCMU' | 'PCMA';
/** RFC 3551 table 4: the static payload types of the codecs we offer. */
const STATIC_AUDIO: Record<AudioCodecName, { payloadType: number; clockRate: number }> = {
  PCMU: { payloadType: 0, clockRate: 8000 },
  PCMA: { payloadType: 8, clockRate: 8000 },
};
const TELEPHONE_EVENT_PT = 101; // the dynamic payload type we offer (RFC 3551 6: 96-127)
// RFC 4733 3.2: events 0-15 are DTMF digits, 16 is flash; what our DTMF path understands.
export const SUPPORTED_EVENTS = '0-16';
const RTP_AVP = 'RTP/AVP'; // RFC 3551: plain RTP; SRTP profiles are not supported
const MIN_PTIME_MS = 10;
const MAX_PTIME_MS = 60;

/** What this side can do, and where it receives media. */
export interface LocalMedia {
  address: string;
  port: number;
  /** Codecs in our preference order (used when we offer). */
  codecs: readonly AudioCodecName[];
  telephoneEvent: boolean;
  ptimeMs?: number;
  /** Our wish: 'sendonly' to put the other side on hold, 'sendrecv' to resume. */
  direction?: Direction;
  /** o= fields; the caller bumps sessionVersion on every new offer or answer that changes (RFC 3264 8). */
  sessionId?: string;
  sessionVersion?: number;
  username?: string;
}

/** The agreed stream, from this side's point of view. */
export interface NegotiatedMedia {
  remoteAddress: string;
  remotePort: number;
  addrType: AddrType;
  /** The codec this side sends: the first common one in the offerer's order. */
  codec: Codec;
  /** Every common codec (the peer may send any of them). */
  codecs: Codec[];
  telephoneEvent: Codec | null;
  ptimeMs: number;
  /** This side's direction. */
  direction: Direction;
  /** The remote side put the call on hold. */
  remoteHold: boolean;
}

export type NegotiationFailure = { ok: false; status: 488; reason: string };
export type AnswerResult = { ok: true; answer: SessionDescription; media: NegotiatedMedia } | NegotiationFailure;
export type AcceptResult = { ok: true; media: NegotiatedMedia } | NegotiationFailure;

function addrTypeOf(address: string): AddrType {
  return address.includes(':') ? 'IP6' : 'IP4';
}

function baseSession(local: LocalMedia): SessionDescription {
  const addrType = addrTypeOf(local.address);
  return {
    version: 0,
    origin: {
      username: local.username ?? '-',
      sessionId: local.sessionId ?? `${Date.now()}`,
      sessionVersion: `${local.sessionVersion ?? 1}`,
      netType: 'IN',
      addrType,
      address: local.address,
    },
    sessionName: '-',
    connection: { netType: 'IN', addrType, address: local.address },
    timing: ['0 0'],
    otherLines: [],
    attributes: [],
    media: [],
  };
}

function codecAttributes(codecs: Codec[]): Attribute[] {
  const out: Attribute[] = [];
  for (const c of codecs) {
    out.push({ name: 'rtpmap', value: `${c.payloadType} ${c.name}/${c.clockRate}` });
    if (c.fmtp !== null) out.push({ name: 'fmtp', value: `${c.payloadType} ${c.fmtp}` });
  }
  return out;
}

function audioMedia(port: number, codecs: Codec[], ptimeMs: number, direction: Direction): MediaDescription {
  return {
    media: 'audio',
    port,
    portCount: null,
    proto: RTP_AVP,
    formats: codecs.map((c) => `${c.payloadType}`),
    connection: null,
    otherLines: [],
    attributes: [...codecAttributes(codecs), { name: 'ptime', value: `${ptimeMs}` }, { name: direction, value: null }],
  };
}

/** An offer with our codecs in our order, plus telephone-event when enabled. */
export function createOffer(local: LocalMedia): SessionDescription {
  const codecs: Codec[] = local.codecs.map((name) => ({ ...STATIC_AUDIO[name], name, channels: 1, fmtp: null }));
  if (local.telephoneEvent) {
    codecs.push({
      payloadType: TELEPHONE_EVENT_PT,
      name: TELEPHONE_EVENT,
      clockRate: 8000,
      channels: 1,
      fmtp: SUPPORTED_EVENTS,
    });
  }
  const session = baseSession(local);
  session.media.push(audioMedia(local.port, codecs, local.ptimeMs ?? DEFAULT_PTIME_MS, local.direction ?? 'sendrecv'));
  return session;
}

function isAudioCodec(c: Codec, wanted: readonly AudioCodecName[]): boolean {
  return (wanted as readonly string[]).includes(c.name.toUpperCase()) && c.clockRate === 8000 && c.channels === 1;
}

/** RFC 4733 2.4.1 / 7.1.1: telephone-event at the audio clock rate, events narrowed to what we support. */
function matchTelephoneEvent(offered: Codec[], clockRate: number): Codec | null {
  const te = offered.find((c) => c.name.toLowerCase() === TELEPHONE_EVENT && c.clockRate === clockRate);
  if (!te) return null;
  const theirs = parseEventList(te.fmtp ?? TELEPHONE_EVENT_DEFAULT_EVENTS);
  const ours = parseEventList(SUPPORTED_EVENTS);
  const common = new Set([...theirs].filter((e) => ours.has(e)));
  if (common.size === 0) return null;
  return { ...te, name: TELEPHONE_EVENT, fmtp: formatEventList(common) };
}

function negotiatePtime(offered: number | null, local: LocalMedia): number {
  // RFC 4566 6: ptime is a hint; follow the offerer when it is a sane multiple of 10 ms for G.711.
  if (offered !== null && offered >= MIN_PTIME_MS && offered <= MAX_PTIME_MS && offered % 10 === 0) return offered;
  return local.ptimeMs ?? DEFAULT_PTIME_MS;
}

function rejected(m: MediaDescription): MediaDescription {
  // RFC 3264 6: a rejected stream is answered with port 0 and at least one of the offered formats.
  return { ...m, port: 0, connection: null, otherLines: [], attributes: [], formats: m.formats.slice(0, 1) };
}

function isUsable(m: MediaDescription, session: SessionDescription): boolean {
  return (
    m.media === 'audio' && m.port !== 0 && m.proto.toUpperCase() === RTP_AVP && connectionAddress(m, session) !== null
  );
}

/**
 * RFC 3264 6: answer the first usable audio stream with the codecs both sides support, in the
 * offerer's order, and telephone-event when both want it; every other m= line is rejected (port 0).
 */
export function answerOffer(offer: SessionDescription, local: LocalMedia): AnswerResult {
  const answer = baseSession(local);
  let chosen: NegotiatedMedia | null = null;
  let reason = 'no audio stream offered';
  for (const m of offer.media) {
    if (chosen !== null || !isUsable(m, offer)) {
      if (chosen === null && m.media === 'audio') reason = `audio stream ${m.proto} port ${m.port} not usable`;
      answer.media.push(rejected(m));
      continue;
    }
    const offered = codecsOf(m);
    const common = offered
      .filter((c) => isAudioCodec(c, local.codecs))
      .map((c) => ({ ...c, name: c.name.toUpperCase() }));
    const [first] = common;
    if (first === undefined) {
      reason = `no common codec (offered ${offered.map((c) => c.name).join(', ') || 'none'})`;
      answer.media.push(rejected(m));
      continue;
    }
    const te = local.telephoneEvent ? matchTelephoneEvent(offered, first.clockRate) : null;
    const ptimeMs = negotiatePtime(ptimeOf(m), local);
    const remoteDirection = effectiveRemoteDirection(m, offer);
    const direction = intersectDirection(reverseDirection(remoteDirection), local.direction ?? 'sendrecv');
    const address = connectionAddress(m, offer) as string;
    chosen = {
      remoteAddress: address,
      remotePort: m.port,
      addrType: addrTypeOf(address),
      codec: first,
      codecs: common,
      telephoneEvent: te,
      ptimeMs,
      direction,
      remoteHold: isHold(m, offer),
    };
    answer.media.push(audioMedia(local.port, te ? [...common, te] : common, ptimeMs, direction));
  }
  if (chosen === null) return { ok: false, status: 488, reason };
  return { ok: true, answer, media: chosen };
}

/**
 * RFC 3264 7: read the answer to our offer. The answerer's first listed codec that we offered is what
 * we send; a rejected or codec-less audio stream fails the exchange.
 */
export function acceptAnswer(offer: SessionDescription, answer: SessionDescription, local: LocalMedia): AcceptResult {
  // RFC 3264 6: the answer has exactly as many m= lines as the offer.
  if (answer.media.length !== offer.media.length) {
    return {
      ok: false,
      status: 488,
      reason: `answer has ${answer.media.length} m= lines, offer had ${offer.media.length}`,
    };
  }
  for (const [i, m] of answer.media.entries()) {
    const offered = offer.media[i];
    if (offered === undefined || offered.media !== 'audio' || !isUsable(m, answer)) continue;
    const offeredCodecs = codecsOf(offered);
    const common = codecsOf(m).filter(
      (c) => isAudioCodec(c, local.codecs) && offeredCodecs.some((o) => o.name.toUpperCase() === c.name.toUpperCase()),
    );
    const [first] = common;
    if (first === undefined) continue;
    const te = local.telephoneEvent ? matchTelephoneEvent(codecsOf(m), first.clockRate) : null;
    const remoteDirection = effectiveRemoteDirection(m, answer);
    const address = connectionAddress(m, answer) as string;
    return {
      ok: true,
      media: {
        remoteAddress: address,
        remotePort: m.port,
        addrType: addrTypeOf(address),
        codec: { ...first, name: first.name.toUpperCase() },
        codecs: common,
        telephoneEvent: te,
        ptimeMs: ptimeOf(m) ?? local.ptimeMs ?? DEFAULT_PTIME_MS,
        direction: intersectDirection(reverseDirection(remoteDirection), local.direction ?? 'sendrecv'),
        remoteHold: isHold(m, answer),
      },
    };
  }
  return { ok: false, status: 488, reason: 'answer accepted no audio stream' };
}
