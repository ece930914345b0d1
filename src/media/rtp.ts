// RTP packets (RFC 3550 5.1) read and written in place: the caller owns every buffer, one mutable header
// object per stream is reused for every packet, and nothing is allocated per packet (no DataView, no subarray,
// no thrown error on the receive path: malformed packets are an ordinary, counted result).

/** RFC 3550 5.1: version field, always 2. */
export const RTP_VERSION = 2;
/** RFC 3550 5.1: fixed header of 12 octets, before CSRCs and extension. */
export const RTP_HEADER_BYTES = 12;
/** RFC 3550 5.1: CSRC count is 4 bits. */
export const RTP_MAX_CSRC = 15;
/** RFC 3550 5.3.1: extension header is 16-bit profile + 16-bit length in 32-bit words. */
export const RTP_EXTENSION_HEADER_BYTES = 4;
/** RFC 5761 4: payload types 64-95 on an RTP port are RTCP packet types 192-223 (rtcp-mux). */
export const RTCP_PT_MIN = 64;
export const RTCP_PT_MAX = 95;
/** Largest UDP payload we ever send; keeps packets under a 1500-byte MTU with IPv6 + UDP headers. */
export const RTP_MAX_PACKET_BYTES = 1452;

/** One RTP header, reused packet after packet. Numbers are unsigned (timestamp, ssrc: uint32). */
export interface RtpHeader {
  marker: boolean;
  payloadType: number;
  sequenceNumber: number;
  timestamp: number;
  ssrc: number;
}

/** What decodeView fills: header fields plus where the payload lies in the buffer it read. */
export interface RtpPacketView extends RtpHeader {
  csrcCount: number;
  hasExtension: boolean;
  extensionProfile: number;
  paddingBytes: number;
  payloadOffset: number;
  payloadLength: number;
}

export function createRtpHeader(): RtpHeader {
  return { marker: false, payloadType: 0, sequenceNumber: 0, timestamp: 0, ssrc: 0 };
}

export function createRtpPacketView(): RtpPacketView {
  return {
    marker: false,
    payloadType: 0,
    sequenceNumber: 0,
    timestamp: 0,
    ssrc: 0,
    csrcCount: 0,
    hasExtension: false,
    extensionProfile: 0,
    paddingBytes: 0,
    payloadOffset: 0,
    payloadLength: 0,
  };
}

/** Result of decodeView: 'ok' or why the packet is not an RTP packet we can use. Constant strings, no allocation. */
export type RtpDecodeResult =
  'ok' | 'too_short' | 'bad_version' | 'rtcp' | 'bad_csrc' | 'bad_extension' | 'bad_padding';

/**
 * Writes the 12-byte fixed header into `out` at `offset` (no CSRCs, no extension: Parley is an end system).
 * Returns the header length; the payload goes right after it.
 */
export function writeHeaderInto(header: RtpHeader, out: Uint8Array, offset = 0): number {
  if (out.length - offset < RTP_HEADER_BYTES) throw new RangeError('RTP output buffer shorter than a header');
  // RFC 3550 5.1: V=2, P=0, X=0, CC=0.
  out[offset] = RTP_VERSION << 6;
  out[offset + 1] = (header.marker ? 0x80 : 0) | (header.payloadType & 0x7f);
  const seq = header.sequenceNumber;
  out[offset + 2] = (seq >>> 8) & 0xff;
  out[offset + 3] = seq & 0xff;
  const ts = header.timestamp;
  out[offset + 4] = (ts >>> 24) & 0xff;
  out[offset + 5] = (ts >>> 16) & 0xff;
  out[offset + 6] = (ts >>> 8) & 0xff;
  out[offset + 7] = ts & 0xff;
  const ssrc = header.ssrc;
  out[offset + 8] = (ssrc >>> 24) & 0xff;
  out[offset + 9] = (ssrc >>> 16) & 0xff;
  out[offset + 10] = (ssrc >>> 8) & 0xff;
  out[offset + 11] = ssrc & 0xff;
  return RTP_HEADER_BYTES;
}

/** Writes header and payload into `out`; returns the packet length. */
export function encodeInto(header: RtpHeader, payload: Uint8Array, out: Uint8Array): number {
  const length = RTP_HEADER_BYTES + payload.length;
  if (length > out.length)
    throw new RangeError(`RTP packet of ${length} bytes does not fit a ${out.length}-byte buffer`);
  writeHeaderInto(header, out, 0);
  out.set(payload, RTP_HEADER_BYTES);
  return length;
}

/**
 * Reads the packet in `buf[0, length)` into `view`. On anything but 'ok' the view's contents are unspecified.
 * Checks follow RFC 3550 A.1 (version, padding within the packet) and 5.3.1 (extension within the packet).
 */
export function decodeView(buf: Uint8Array, view: RtpPacketView, length: number = buf.length): RtpDecodeResult {
  if (length < RTP_HEADER_BYTES) return 'too_short';
  const b0 = buf[0];
  if (b0 >>> 6 !== RTP_VERSION) return 'bad_version';
  const b1 = buf[1];
  const pt = b1 & 0x7f;
  if (pt >= RTCP_PT_MIN && pt <= RTCP_PT_MAX) return 'rtcp';
  const cc = b0 & 0x0f;
  let offset = RTP_HEADER_BYTES + cc * 4;
  if (offset > length) return 'bad_csrc';
  view.hasExtension = (b0 & 0x10) !== 0;
  view.extensionProfile = 0;
  if (view.hasExtension) {
    if (offset + RTP_EXTENSION_HEADER_BYTES > length) return 'bad_extension';
    view.extensionProfile = (buf[offset] << 8) | buf[offset + 1];
    const words = (buf[offset + 2] << 8) | buf[offset + 3];
    offset += RTP_EXTENSION_HEADER_BYTES + words * 4;
    if (offset > length) return 'bad_extension';
  }
  let padding = 0;
  if ((b0 & 0x20) !== 0) {
    // RFC 3550 5.1: the last octet of the padding counts the padding octets, itself included.
    padding = buf[length - 1];
    if (padding === 0 || offset + padding > length) return 'bad_padding';
  }
  view.marker = (b1 & 0x80) !== 0;
  view.payloadType = pt;
  view.sequenceNumber = (buf[2] << 8) | buf[3];
  view.timestamp = ((buf[4] << 24) | (buf[5] << 16) | (buf[6] << 8) | buf[7]) >>> 0;
  view.ssrc = ((buf[8] << 24) | (buf[9] << 16) | (buf[10] << 8) | buf[11]) >>> 0;
  view.csrcCount = cc;
  view.paddingBytes = padding;
  view.payloadOffset = offset;
  view.payloadLength = length - offset - padding;
  return 'ok';
}

/** Allocating convenience for edges and tests: the payload of a decoded view as a subarray (a view, no copy). */
export function payloadOf(buf: Uint8Array, view: RtpPacketView): Uint8Array {
  return buf.subarray(view.payloadOffset, view.payloadOffset + view.payloadLength);
}

/** Sequence-number arithmetic modulo 2^16 (RFC 3550 A.1): signed distance from a to b in (-32768, 32768]. */
export function seqDiff(a: number, b: number): number {
  const d = (b - a) & 0xffff;
  return d > 0x8000 ? d - 0x10000 : d;
}

/** Timestamp arithmetic modulo 2^32: signed distance from a to b. */
export function tsDiff(a: number, b: number): number {
  return (b - a) | 0;
}

/** A random uint32 (RFC 3550 5.1: SSRC, initial sequence number and timestamp SHOULD be random). */
export function randomUint32(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0];
}

/**
 * The send side of one RTP stream: SSRC, sequence number and timestamp, advanced per packet.
 * The header object is the one mutable header reused for every packet of the stream.
 */
export class RtpSender {
  readonly header: RtpHeader;
  private readonly payloadType: number;

  constructor(opts: { payloadType: number; ssrc?: number; initialSequence?: number; initialTimestamp?: number }) {
    this.payloadType = opts.payloadType;
    this.header = createRtpHeader();
    this.header.payloadType = opts.payloadType;
    // RFC 3550 5.1: initial values of sequence number and timestamp SHOULD be random.
    this.header.ssrc = (opts.ssrc ?? randomUint32()) >>> 0;
    this.header.sequenceNumber = (opts.initialSequence ?? randomUint32()) & 0xffff;
    this.header.timestamp = (opts.initialTimestamp ?? randomUint32()) >>> 0;
  }

  /**
   * Writes the next packet's header into `out` (payload follows at RTP_HEADER_BYTES), then advances the
   * sequence number. The timestamp is the stream's current one unless given (RFC 4733 2.5.1.1: every packet of
   * an event carries the event's start timestamp); it is advanced separately (advanceTimestamp), once per frame
   * of media time, so it stays continuous whatever is sent.
   */
  writeNext(
    out: Uint8Array,
    marker: boolean,
    payloadType: number = this.payloadType,
    timestamp: number = this.header.timestamp,
  ): number {
    const h = this.header;
    const streamTs = h.timestamp;
    h.marker = marker;
    h.payloadType = payloadType;
    h.timestamp = timestamp;
    const n = writeHeaderInto(h, out, 0);
    h.payloadType = this.payloadType;
    h.timestamp = streamTs;
    h.sequenceNumber = (h.sequenceNumber + 1) & 0xffff;
    return n;
  }

  advanceTimestamp(ticks: number): void {
    this.header.timestamp = (this.header.timestamp + ticks) >>> 0;
  }
}
