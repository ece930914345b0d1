// A call's audio as the worker handles it: the conversation's format for the negotiated codec, the RTP clock, the
// sizes of a 20 ms frame and of the packets sent (a=ptime), and 20 ms of encoded silence.
import { createEncoder } from '../media/codec.js';
import { formatInfo, FRAME_MS } from '../media/format.js';
import { OPUS_FRAME_SAMPLES } from '../media/opus.js';
import type { CallAudioFormat } from '../conversation/host.js';
import type { CallMedia } from '../workers/worker-protocol.js';

/** RFC 7587 4.1 / 3551 4.5.14: the RTP clocks of the codecs Parley answers. */
const CLOCK_RATES: Record<CallMedia['codec'], number> = { PCMU: 8000, PCMA: 8000, opus: 48000 };
const FORMATS: Record<CallMedia['codec'], CallAudioFormat> = {
  PCMU: 'mulaw_8000',
  PCMA: 'alaw_8000',
  opus: 'opus_48000',
};
/**
 * Most 20 ms frames sent in one packet: 120 ms, the longest ptime RFC 3551 4.5 lets G.711 packets run to without
 * exceeding an Ethernet MTU (960 octets + headers).
 */
export const MAX_FRAMES_PER_PACKET = 6;
/** RFC 6716 3.4: an opus packet is at most 1275 octets of one frame; the whole datagram a slot takes in. */
const OPUS_MAX_PAYLOAD_BYTES = 1500;

export interface CallCodec {
  codec: CallMedia['codec'];
  format: CallAudioFormat;
  clockRate: number;
  /** RTP timestamp units in 20 ms. */
  ticksPerFrame: number;
  /** Encoded bytes of 20 ms; 0 for opus (variable). */
  bytesPerFrame: number;
  /** Largest payload taken in (one jitter-buffer slot): 120 ms of G.711, a whole datagram of opus. */
  maxPayloadBytes: number;
}

export function callCodec(codec: CallMedia['codec']): CallCodec {
  const format = FORMATS[codec];
  const info = formatInfo(format);
  const clockRate = CLOCK_RATES[codec];
  return {
    codec,
    format,
    clockRate,
    ticksPerFrame: (clockRate * FRAME_MS) / 1000,
    bytesPerFrame: info.bytesPerFrame,
    maxPayloadBytes: info.bytesPerFrame > 0 ? info.bytesPerFrame * MAX_FRAMES_PER_PACKET : OPUS_MAX_PAYLOAD_BYTES,
  };
}

/**
 * 20 ms frames per packet sent: the largest whole number of frames within the peer's ptime (RFC 4566 6: a=ptime is
 * what the receiver prefers), between 1 and MAX_FRAMES_PER_PACKET. Opus always sends one frame per packet.
 */
export function framesPerPacket(media: CallMedia): number {
  if (media.codec === 'opus') return 1;
  return Math.max(1, Math.min(MAX_FRAMES_PER_PACKET, Math.floor(media.ptimeMs / FRAME_MS)));
}

const silences = new Map<CallAudioFormat, Uint8Array>();

/**
 * 20 ms of silence in `format`, encoded once per format and shared (read only): what a call sends when the
 * conversation has nothing to say. An opus packet decodes on its own, so one is sent again and again.
 */
export function encodedSilence(format: CallAudioFormat): Uint8Array {
  let s = silences.get(format);
  if (!s) {
    const info = formatInfo(format);
    const pcm = new Int16Array(format === 'opus_48000' ? OPUS_FRAME_SAMPLES : info.samplesPerFrame);
    const out = new Uint8Array(format === 'opus_48000' ? OPUS_MAX_PAYLOAD_BYTES : info.bytesPerFrame);
    const n = createEncoder(format).encodeInto(pcm, out);
    s = out.slice(0, n);
    silences.set(format, s);
  }
  return s;
}
