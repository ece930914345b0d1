// RTCP for one call (RFC 3550 6): the compound packets Parley sends (a sender or receiver report with at most one
// reception report block, SDES with the CNAME, and BYE at the end), what it reads of the peer's (its sender info and
// its report block about Parley's stream), and the report interval. Packets are written into and read from
// caller-owned buffers; nothing is allocated per packet.

/** RFC 3550 6.4.1 / 6.4.2 / 6.5 / 6.6: packet types. */
export const RTCP_SR = 200;
export const RTCP_RR = 201;
export const RTCP_SDES = 202;
export const RTCP_BYE = 203;
/** RFC 3550 6.5.1: the CNAME item type; 0 ends an SDES chunk's item list. */
const SDES_CNAME = 1;
const SDES_END = 0;
/** RFC 3550 6.4.1: header (4) + SSRC (4) + sender info (20) octets. */
const SR_FIXED_BYTES = 28;
/** RFC 3550 6.4.2: header (4) + SSRC (4) octets. */
const RR_FIXED_BYTES = 8;
/** RFC 3550 6.4.1: a reception report block is six 32-bit words. */
export const REPORT_BLOCK_BYTES = 24;
/** RFC 3550 6.6: header + one SSRC. */
const BYE_BYTES = 8;
const RTCP_VERSION = 2;
/** RFC 3550 6.4.1: cumulative number of packets lost is a signed 24-bit number, clamped at its bounds. */
const MAX_CUMULATIVE_LOST = 0x7fffff;
const MIN_CUMULATIVE_LOST = -0x800000;
/** RFC 5905 6: NTP time counts seconds from 1900-01-01; the Unix epoch is this many seconds later. */
const NTP_UNIX_OFFSET_SEC = 2_208_988_800;
const TWO_POW_32 = 0x1_0000_0000;
/** DLSR and round trips are in units of 1/65536 s (RFC 3550 6.4.1). */
const UNITS_PER_SEC = 65536;

/**
 * RFC 3550 6.2: the minimum interval between reports (5 s). For a two-party call the interval 6.3.1 computes from
 * the session bandwidth (5 % of ~80 kb/s of G.711 or opus RTP, a ~100-octet compound packet) is well under it, so
 * the minimum is the deterministic interval; the first report goes out after half of it (6.2, "initial").
 */
export const RTCP_MIN_INTERVAL_MS = 5000;
/** RFC 3550 6.3.1: the randomised interval is divided by e - 3/2 to compensate for timer reconsideration. */
const RTCP_COMPENSATION = Math.E - 1.5;

/** RFC 3550 6.3.1: the next report's delay, the deterministic interval times a uniform factor in [0.5, 1.5]. */
export function rtcpIntervalMs(initial: boolean, random: number = Math.random()): number {
  const td = initial ? RTCP_MIN_INTERVAL_MS / 2 : RTCP_MIN_INTERVAL_MS;
  return (td * (0.5 + random)) / RTCP_COMPENSATION;
}

/** One reception report block (RFC 3550 6.4.1), as written or as read; numbers unsigned unless noted. */
export interface ReportBlock {
  ssrc: number;
  /** Fraction lost since the previous report, in 1/256. */
  fractionLost: number;
  /** Cumulative packets lost (signed: duplicates can make it negative). */
  cumulativeLost: number;
  /** Extended highest sequence number received (cycles in the high 16 bits). */
  extendedHighestSeq: number;
  /** Interarrival jitter in RTP timestamp units. */
  jitter: number;
  /** The middle 32 bits of the NTP timestamp of the last SR received from the source, 0 if none. */
  lastSr: number;
  /** Delay since that SR, in 1/65536 s; 0 if none. */
  delaySinceLastSr: number;
}

export function createReportBlock(): ReportBlock {
  return {
    ssrc: 0,
    fractionLost: 0,
    cumulativeLost: 0,
    extendedHighestSeq: 0,
    jitter: 0,
    lastSr: 0,
    delaySinceLastSr: 0,
  };
}

/** What the sender's part of a report carries (RFC 3550 6.4.1 sender info). */
export interface SenderInfo {
  /** Wall-clock time of the report, ms since the Unix epoch (written as NTP). */
  wallMs: number;
  /** The RTP timestamp of the same instant. */
  rtpTimestamp: number;
  packets: number;
  /** Payload octets sent (headers and padding excluded). */
  octets: number;
}

function put32(b: Uint8Array, at: number, v: number): void {
  b[at] = (v >>> 24) & 0xff;
  b[at + 1] = (v >>> 16) & 0xff;
  b[at + 2] = (v >>> 8) & 0xff;
  b[at + 3] = v & 0xff;
}

function get32(b: Uint8Array, at: number): number {
  return ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;
}

/** RFC 3550 6.4.1 common header: V=2, P=0, count, packet type, length in 32-bit words minus one. */
function putHeader(b: Uint8Array, at: number, count: number, type: number, bytes: number): void {
  b[at] = (RTCP_VERSION << 6) | (count & 0x1f);
  b[at + 1] = type;
  const words = bytes / 4 - 1;
  b[at + 2] = (words >>> 8) & 0xff;
  b[at + 3] = words & 0xff;
}

/** The NTP timestamp of `wallMs` as its two 32-bit halves, written at b[at, at + 8). */
function putNtp(b: Uint8Array, at: number, wallMs: number): void {
  const sec = Math.floor(wallMs / 1000);
  put32(b, at, (sec + NTP_UNIX_OFFSET_SEC) >>> 0);
  put32(b, at + 4, Math.floor(((wallMs - sec * 1000) / 1000) * TWO_POW_32) >>> 0);
}

/** RFC 3550 6.4.1: the middle 32 bits of the NTP timestamp of `wallMs` (what LSR and round trips compare). */
export function ntpMiddle(wallMs: number): number {
  const sec = Math.floor(wallMs / 1000);
  const frac16 = Math.floor(((wallMs - sec * 1000) / 1000) * UNITS_PER_SEC);
  return ((((sec + NTP_UNIX_OFFSET_SEC) & 0xffff) << 16) | frac16) >>> 0;
}

function putBlock(b: Uint8Array, at: number, r: ReportBlock): void {
  put32(b, at, r.ssrc);
  const lost = Math.max(MIN_CUMULATIVE_LOST, Math.min(MAX_CUMULATIVE_LOST, r.cumulativeLost));
  put32(b, at + 4, ((r.fractionLost & 0xff) << 24) | (lost & 0xffffff));
  put32(b, at + 8, r.extendedHighestSeq);
  put32(b, at + 12, r.jitter);
  put32(b, at + 16, r.lastSr);
  put32(b, at + 20, r.delaySinceLastSr);
}

function readBlock(b: Uint8Array, at: number, out: ReportBlock): void {
  out.ssrc = get32(b, at);
  out.fractionLost = b[at + 4];
  const lost = (b[at + 5] << 16) | (b[at + 6] << 8) | b[at + 7];
  out.cumulativeLost = lost & 0x800000 ? lost - 0x1000000 : lost;
  out.extendedHighestSeq = get32(b, at + 8);
  out.jitter = get32(b, at + 12);
  out.lastSr = get32(b, at + 16);
  out.delaySinceLastSr = get32(b, at + 20);
}

/**
 * Writes a sender report (when `sender` is given) or a receiver report, with `block` as its one report block (none
 * when null), at b[at]; returns its length.
 */
export function writeReport(
  b: Uint8Array,
  at: number,
  ssrc: number,
  sender: SenderInfo | null,
  block: ReportBlock | null,
): number {
  const blocks = block ? 1 : 0;
  const fixed = sender ? SR_FIXED_BYTES : RR_FIXED_BYTES;
  const bytes = fixed + blocks * REPORT_BLOCK_BYTES;
  putHeader(b, at, blocks, sender ? RTCP_SR : RTCP_RR, bytes);
  put32(b, at + 4, ssrc);
  if (sender) {
    putNtp(b, at + 8, sender.wallMs);
    put32(b, at + 16, sender.rtpTimestamp);
    put32(b, at + 20, sender.packets);
    put32(b, at + 24, sender.octets);
  }
  if (block) putBlock(b, at + fixed, block);
  return bytes;
}

/**
 * An SDES packet with one chunk, `ssrc`'s CNAME (RFC 3550 6.5.1), made once per call: every compound packet carries
 * it (6.1). The CNAME is at most 255 octets of ASCII.
 */
export function sdesPacket(ssrc: number, cname: string): Uint8Array {
  const text = Buffer.from(cname, 'ascii');
  if (text.length > 255) throw new RangeError('an SDES CNAME is at most 255 octets');
  // SSRC, type, length, text, the end item; padded to a 32-bit boundary with more end (zero) octets.
  const chunk = 4 + 2 + text.length + 1;
  const bytes = 4 + Math.ceil(chunk / 4) * 4;
  const b = new Uint8Array(bytes);
  putHeader(b, 0, 1, RTCP_SDES, bytes);
  put32(b, 4, ssrc);
  b[8] = SDES_CNAME;
  b[9] = text.length;
  b.set(text, 10);
  b[10 + text.length] = SDES_END;
  return b;
}

/** Writes a BYE for `ssrc` (RFC 3550 6.6, no reason) at b[at]; returns its length. */
export function writeBye(b: Uint8Array, at: number, ssrc: number): number {
  putHeader(b, at, 1, RTCP_BYE, BYE_BYTES);
  put32(b, at + 4, ssrc);
  return BYE_BYTES;
}

/** What readCompound found in one compound packet from the peer. */
export interface PeerRtcp {
  /** The packet was a valid compound packet (RFC 3550 A.2: version 2, lengths adding up, SR or RR first). */
  valid: boolean;
  /** An SR came: its NTP middle 32 bits (for LSR). */
  senderReport: boolean;
  srNtpMiddle: number;
  /** A report block about the SSRC asked for came: in `block`. */
  aboutUs: boolean;
  readonly block: ReportBlock;
  bye: boolean;
}

export function createPeerRtcp(): PeerRtcp {
  return { valid: false, senderReport: false, srNtpMiddle: 0, aboutUs: false, block: createReportBlock(), bye: false };
}

/**
 * Reads the compound packet b[0, length) (RFC 3550 6.1) into `out`: the sender info of an SR, the report block whose
 * SSRC is `ourSsrc` (in an SR or RR), and whether it says BYE. Other packet types are skipped.
 */
export function readCompound(b: Uint8Array, length: number, ourSsrc: number, out: PeerRtcp): PeerRtcp {
  out.valid = false;
  out.senderReport = false;
  out.aboutUs = false;
  out.bye = false;
  let at = 0;
  let first = true;
  while (at + 4 <= length) {
    if (b[at] >>> 6 !== RTCP_VERSION) return out;
    const count = b[at] & 0x1f;
    const type = b[at + 1];
    const bytes = (((b[at + 2] << 8) | b[at + 3]) + 1) * 4;
    if (at + bytes > length) return out;
    // RFC 3550 A.2: a compound packet begins with an SR or RR.
    if (first && type !== RTCP_SR && type !== RTCP_RR) return out;
    first = false;
    if (type === RTCP_SR || type === RTCP_RR) {
      const fixed = type === RTCP_SR ? SR_FIXED_BYTES : RR_FIXED_BYTES;
      if (fixed + count * REPORT_BLOCK_BYTES > bytes) return out;
      if (type === RTCP_SR) {
        out.senderReport = true;
        out.srNtpMiddle = ((get32(b, at + 8) << 16) | (get32(b, at + 12) >>> 16)) >>> 0;
      }
      for (let i = 0; i < count; i++) {
        const blockAt = at + fixed + i * REPORT_BLOCK_BYTES;
        if (get32(b, blockAt) !== ourSsrc) continue;
        readBlock(b, blockAt, out.block);
        out.aboutUs = true;
      }
    } else if (type === RTCP_BYE) {
      out.bye = true;
    }
    at += bytes;
  }
  out.valid = at === length && !first;
  return out;
}

/** RFC 3550 6.4.1: the round trip the peer's block shows, in ms, at wall time `wallMs`; null without an SR of ours. */
export function roundTripMs(block: ReportBlock, wallMs: number): number | null {
  if (block.lastSr === 0) return null;
  const units = (ntpMiddle(wallMs) - block.lastSr - block.delaySinceLastSr) >>> 0;
  // A negative difference (clock step, bogus report) wraps to a huge one: not a round trip.
  if (units > UNITS_PER_SEC * 60) return null;
  return (units * 1000) / UNITS_PER_SEC;
}

/** DLSR: the delay since the peer's last SR arrived, in 1/65536 s. */
export function delaySinceUnits(ms: number): number {
  return Math.max(0, Math.floor((ms / 1000) * UNITS_PER_SEC)) >>> 0;
}
