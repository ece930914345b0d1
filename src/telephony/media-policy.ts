// SDP policy of telephony calls: what Parley offers and answers (G.711 PCMU/PCMA, telephone-event/8000, 20 ms
// packets, the advertised address and the call's RTP port), and the negotiated stream as the media worker's
// CallMedia. The offer/answer itself (RFC 3264) and the 488 for an offer with no common codec are sip/'s.
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import {
  answerOffer,
  codecsOf,
  createOffer,
  LEGACY_HOLD_ADDRESSES,
  TELEPHONE_EVENT,
  type AnswerResult,
  type AudioCodecName,
  type Direction,
  type LocalMedia,
  type MediaDescription,
  type NegotiatedMedia,
  type SessionDescription,
} from '../../sip/sdp/index.js';
import { ConfigError, type Settings } from '../config.js';
import type { AUDIO_FORMATS } from '../schemas/agents.js';
import type { CallMedia } from '../workers/worker-protocol.js';

export type { CallMedia };

export type AgentAudioFormat = (typeof AUDIO_FORMATS)[number];

/** Where the peer receives RTP; null while it receives nothing (port 0, or the legacy hold address). */
export type RemoteMedia = { address: string; port: number } | null;

/** RFC 3551 4.5: G.711's default packetization, which every SIP peer handles. */
export const PTIME_MS = 20;
/** What Parley offers, in this order unless the agent prefers another (RFC 3264 5.1: the offerer's preference). */
export const CALL_CODECS: readonly AudioCodecName[] = ['PCMU', 'PCMA'];

/** The codec that spares the agent's audio a transcoding step, if the agent's format is one. */
export function preferredCodec(format: AgentAudioFormat): AudioCodecName | null {
  return format === 'mulaw_8000' ? 'PCMU' : null;
}

export interface MediaPolicyInput {
  audioFormat: AgentAudioFormat;
  /** advertisedAddress(settings). */
  address: string;
  /** The call's RTP port (RTCP on the next one). */
  port: number;
  direction?: Direction;
}

/** LocalMedia for sip/'s createOffer, answerOffer and the dialog's answers to re-INVITEs. */
export function localMedia(input: MediaPolicyInput): LocalMedia {
  const preferred = preferredCodec(input.audioFormat);
  const codecs = preferred ? [preferred, ...CALL_CODECS.filter((c) => c !== preferred)] : [...CALL_CODECS];
  return {
    address: input.address,
    port: input.port,
    codecs,
    telephoneEvent: true,
    ptimeMs: PTIME_MS,
    direction: input.direction ?? 'sendrecv',
  };
}

function codecNameOf(m: MediaDescription, format: string): string | null {
  const codec = codecsOf({ ...m, formats: [format] })[0];
  return codec ? codec.name.toUpperCase() : null;
}

/**
 * The offer with the agent's preferred codec moved to the front of each audio stream, so the answer lists it
 * first and both sides send it (RFC 3264 6.1: the answerer MAY order formats by its own preference). Without a
 * preference the offer is returned as it is (the offerer's order).
 */
export function preferAgentCodec(offer: SessionDescription, format: AgentAudioFormat): SessionDescription {
  const preferred = preferredCodec(format);
  if (preferred === null) return offer;
  return {
    ...offer,
    media: offer.media.map((m) => {
      if (m.media !== 'audio') return m;
      const first = m.formats.filter((f) => codecNameOf(m, f) === preferred);
      if (first.length === 0) return m;
      return { ...m, formats: [...first, ...m.formats.filter((f) => !first.includes(f))] };
    }),
  };
}

/**
 * The answer to an inbound call's offer: sip/'s RFC 3264 answer with the agent's codec preferred. `ok: false`
 * (status 488) when the offer has no usable G.711 stream; pass the answer's SDP as createUAS's `localSdp` and
 * localMedia(input) as its `media`.
 */
export function answerInbound(offer: SessionDescription, input: MediaPolicyInput): AnswerResult {
  return answerOffer(preferAgentCodec(offer, input.audioFormat), localMedia(input));
}

/**
 * The worker's CallMedia of the first codec Parley offers (localMedia(input)): what a call is assigned before the
 * peer's answer names the codec (an outbound INVITE, the 200 answering an INVITE without SDP). Its direction is the
 * one the peer's answer is expected to state.
 */
export function offeredCallMedia(input: MediaPolicyInput): CallMedia {
  const [stream] = createOffer(localMedia(input)).media;
  const codecs = stream ? codecsOf(stream) : [];
  const first = codecs[0];
  if (first === undefined || (first.name !== 'PCMU' && first.name !== 'PCMA'))
    throw new Error('Parley offers G.711 first');
  const te = codecs.find((c) => c.name.toLowerCase() === TELEPHONE_EVENT);
  return {
    codec: first.name,
    payloadType: first.payloadType,
    clockRate: first.clockRate,
    channels: first.channels,
    telephoneEventPayloadType: te?.payloadType ?? null,
    ptimeMs: PTIME_MS,
    direction: PEER_DIRECTION[input.direction ?? 'sendrecv'],
  };
}

/** The worker's CallMedia for a negotiated stream. Throws for a codec the worker cannot run (a policy bug). */
export function callMediaOf(media: NegotiatedMedia): CallMedia {
  const name = media.codec.name.toUpperCase();
  const codec = name === 'PCMU' || name === 'PCMA' ? name : name === 'OPUS' ? 'opus' : null;
  if (codec === null) throw new Error(`negotiated codec ${media.codec.name} is not one the media worker runs`);
  return {
    codec,
    payloadType: media.codec.payloadType,
    clockRate: media.codec.clockRate,
    channels: media.codec.channels,
    telephoneEventPayloadType: media.telephoneEvent?.payloadType ?? null,
    ptimeMs: media.ptimeMs,
    direction: PEER_DIRECTION[media.direction],
  };
}

/** CallMedia carries the peer's own view of the stream (RFC 3264 6.1): the reverse of this side's direction. */
const PEER_DIRECTION: Record<Direction, Direction> = {
  sendrecv: 'sendrecv',
  sendonly: 'recvonly',
  recvonly: 'sendonly',
  inactive: 'inactive',
};

/** Where to send the call's RTP (RFC 3264 8.4: port 0 or c=0.0.0.0 means nowhere for now). */
export function remoteMediaOf(media: NegotiatedMedia): RemoteMedia {
  if (media.remotePort === 0 || LEGACY_HOLD_ADDRESSES.includes(media.remoteAddress)) return null;
  return { address: media.remoteAddress, port: media.remotePort };
}

const UNSPECIFIED_ADDRESSES = ['0.0.0.0', '::'];

/**
 * The address put in SDP c= and Contact: PARLEY_SIP_PUBLIC_ADDRESS, else PARLEY_HOST; when PARLEY_HOST binds every
 * interface (0.0.0.0, ::), the machine's first external IPv4 address (then IPv6 for ::). Throws ConfigError
 * naming PARLEY_SIP_PUBLIC_ADDRESS when there is none to pick.
 */
export function advertisedAddress(
  settings: Pick<Settings, 'PARLEY_SIP_PUBLIC_ADDRESS' | 'PARLEY_HOST'>,
  interfaces: NodeJS.Dict<NetworkInterfaceInfo[]> = networkInterfaces(),
): string {
  if (settings.PARLEY_SIP_PUBLIC_ADDRESS) return settings.PARLEY_SIP_PUBLIC_ADDRESS;
  const host = settings.PARLEY_HOST;
  if (!UNSPECIFIED_ADDRESSES.includes(host)) return host;
  const external = Object.values(interfaces)
    .flatMap((list) => list ?? [])
    .filter((i) => !i.internal);
  const v4 = external.find((i) => i.family === 'IPv4');
  if (v4) return v4.address;
  const v6 = host === '::' ? external.find((i) => i.family === 'IPv6' && i.scopeid === 0) : undefined;
  if (v6) return v6.address;
  throw new ConfigError([
    {
      setting: 'PARLEY_SIP_PUBLIC_ADDRESS',
      message: `PARLEY_HOST ${host} binds every interface and none has an external address to put in SDP; set the address peers reach`,
    },
  ]);
}
