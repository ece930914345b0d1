// Audio formats and 20 ms frames: the names the API, the STS socket and SDP use, and their sizes.
// Frames are Int16Array PCM views; encoded frames are Uint8Array views (docs/ARCHITECTURE.md, "Media pipeline").

import { endianness } from 'node:os';

/**
 * Hosts whose typed arrays hold samples in the byte order of the pcm_* wire formats and of WAV (both little-endian):
 * there, PCM is copied rather than converted byte by byte.
 */
export const LITTLE_ENDIAN_HOST = endianness() === 'LE';

/** The media packetization interval everywhere in Parley. RFC 3551 4.5: default packetization 20 ms. */
export const FRAME_MS = 20;
export const FRAMES_PER_SECOND = 1000 / FRAME_MS;

export const AUDIO_FORMATS = [
  'pcm_48000',
  'pcm_44100',
  'pcm_24000',
  'pcm_22050',
  'pcm_16000',
  'pcm_8000',
  'mulaw_8000',
  'alaw_8000',
  'opus_48000',
] as const;
export type AudioFormat = (typeof AUDIO_FORMATS)[number];

export type Encoding = 'pcm' | 'mulaw' | 'alaw' | 'opus';

export interface FormatInfo {
  readonly name: AudioFormat;
  readonly encoding: Encoding;
  readonly sampleRate: number;
  /** PCM samples in one 20 ms frame (one channel). 44.1 kHz: 882. */
  readonly samplesPerFrame: number;
  /** Encoded bytes of one 20 ms frame; 0 for variable-size (Opus). */
  readonly bytesPerFrame: number;
  /** RTP static payload type, RFC 3551 table 4, or -1 when dynamic/none. */
  readonly rtpPayloadType: number;
  /** RTP clock rate, RFC 3551 4.5.14 (G.711: 8000), RFC 7587 4.1 (Opus: always 48000). */
  readonly rtpClockRate: number;
}

/** RFC 3551 table 4: PCMU = 0, PCMA = 8. */
export const PAYLOAD_TYPE_PCMU = 0;
export const PAYLOAD_TYPE_PCMA = 8;

export function samplesPerFrame(sampleRate: number, frameMs: number = FRAME_MS): number {
  const n = (sampleRate * frameMs) / 1000;
  if (!Number.isInteger(n)) throw new RangeError(`${frameMs} ms at ${sampleRate} Hz is not a whole number of samples`);
  return n;
}

function pcm(name: AudioFormat, rate: number): FormatInfo {
  const spf = samplesPerFrame(rate);
  return {
    name,
    encoding: 'pcm',
    sampleRate: rate,
    samplesPerFrame: spf,
    bytesPerFrame: spf * 2,
    rtpPayloadType: -1,
    rtpClockRate: rate,
  };
}

const FORMATS: Readonly<Record<AudioFormat, FormatInfo>> = {
  pcm_48000: pcm('pcm_48000', 48000),
  pcm_44100: pcm('pcm_44100', 44100),
  pcm_24000: pcm('pcm_24000', 24000),
  pcm_22050: pcm('pcm_22050', 22050),
  pcm_16000: pcm('pcm_16000', 16000),
  pcm_8000: pcm('pcm_8000', 8000),
  // G.711: one byte per sample.
  mulaw_8000: {
    name: 'mulaw_8000',
    encoding: 'mulaw',
    sampleRate: 8000,
    samplesPerFrame: 160,
    bytesPerFrame: 160,
    rtpPayloadType: PAYLOAD_TYPE_PCMU,
    rtpClockRate: 8000,
  },
  alaw_8000: {
    name: 'alaw_8000',
    encoding: 'alaw',
    sampleRate: 8000,
    samplesPerFrame: 160,
    bytesPerFrame: 160,
    rtpPayloadType: PAYLOAD_TYPE_PCMA,
    rtpClockRate: 8000,
  },
  opus_48000: {
    name: 'opus_48000',
    encoding: 'opus',
    sampleRate: 48000,
    samplesPerFrame: 960,
    bytesPerFrame: 0,
    rtpPayloadType: -1,
    rtpClockRate: 48000,
  },
};

export function formatInfo(name: AudioFormat): FormatInfo {
  const info = FORMATS[name];
  if (!info) throw new RangeError(`unknown audio format ${String(name)}`);
  return info;
}

export function isAudioFormat(value: string): value is AudioFormat {
  return (AUDIO_FORMATS as readonly string[]).includes(value);
}

/** RTP timestamp units advanced by one 20 ms frame of this format. */
export function rtpTicksPerFrame(name: AudioFormat): number {
  const info = formatInfo(name);
  return samplesPerFrame(info.rtpClockRate);
}

/** Duration in ms of `bytes` of a fixed-size format (not Opus). */
export function durationMs(name: AudioFormat, bytes: number): number {
  const info = formatInfo(name);
  if (info.bytesPerFrame === 0) throw new RangeError(`${name} has no fixed frame size`);
  return (bytes / info.bytesPerFrame) * FRAME_MS;
}
