// Adaptive jitter buffer for one inbound RTP stream: reorders, drops duplicates and hopelessly late packets,
// reports losses for concealment, and sizes its delay from the measured interarrival jitter (RFC 3550 A.8).
//
// Two release modes:
// - 'on_arrival' (the inbound chain to a speech engine): a frame is released as soon as it is the next one in
//   sequence, so in-order audio is never held; only a gap waits, up to the target delay past the missing
//   frame's expected arrival, before it is declared lost. Engines need order and completeness, not a steady
//   playout clock, and inbound audio is never held for a tick (docs/ARCHITECTURE.md, "Media pipeline").
// - 'at_deadline' (playout to a clocked sink, e.g. a bridged leg): every frame is released at its expected
//   arrival plus the target delay.
// Storage is preallocated: a ring of slots indexed by sequence number, each holding a copy of the payload. A
// released frame is read in place (store, releasedOffset) until the next push, so nothing is copied out.
// Per packet nothing is allocated: RTP timestamps are uint32 and mostly beyond V8's small integers, so they
// never cross a call boundary as arguments or results (that would box each one); they arrive inside the
// packet object and are turned into small distances at once.
import { seqDiff } from './rtp.js';

export type ReleaseMode = 'on_arrival' | 'at_deadline';

/** What push() reads of a packet (an RtpPacketView is one). */
export interface JitterPacket {
  readonly sequenceNumber: number;
  readonly timestamp: number;
  readonly payloadOffset: number;
  readonly payloadLength: number;
}

export interface JitterBufferOptions {
  /** RTP clock rate of the payload (8000 for G.711). */
  clockRate: number;
  /** RTP timestamp units per packet (160 for 20 ms of G.711). */
  ticksPerFrame: number;
  /** Largest payload kept per slot; larger packets are rejected. */
  maxPayloadBytes: number;
  minDelayMs?: number;
  maxDelayMs?: number;
  initialDelayMs?: number;
  release?: ReleaseMode;
}

export const JITTER_BUFFER_DEFAULTS = {
  /** One frame: the least a reordered neighbour can need. */
  minDelayMs: 20,
  /** ITU-T G.114: beyond ~150-200 ms one-way, conversation suffers; we never wait longer than 200 ms. */
  maxDelayMs: 200,
  initialDelayMs: 40,
  release: 'on_arrival',
} as const satisfies Partial<JitterBufferOptions>;

/** RFC 3550 A.8: J += (|D| - J) / 16. */
const JITTER_GAIN = 1 / 16;
/**
 * Target = JITTER_MULTIPLIER x J. J estimates the mean |difference| of consecutive transits; for exponential
 * transit spread (the heavy-tailed case seen on access links) that equals the mean excess delay, and waiting
 * 5 x it past the fastest transit leaves e^-5, about 0.7%, of packets late. Normal spreads need less.
 */
const JITTER_MULTIPLIER = 5;
/** The target falls slowly (per released frame) so that a quiet spell does not undo the margin at once. */
const DELAY_DECAY_MS_PER_FRAME = 0.5;
/** RFC 3550 A.1: a jump of more than MAX_DROPOUT packets ahead is a restart of the stream, not a loss. */
const MAX_DROPOUT = 3000;
/** RFC 3550 A.1: packets more than MAX_MISORDER behind are from before a restart. */
const MAX_MISORDER = 100;
/** The transit baseline creeps up this much per packet, following a slowly drifting clock. */
const BASELINE_CREEP_MS = 0.05;

/** pop() results besides a positive byte count. */
export const JB_NONE = 0;
export const JB_LOST = -1;

export class JitterBuffer {
  readonly clockRate: number;
  readonly ticksPerFrame: number;
  private readonly frameMs: number;
  private readonly minDelay: number;
  private readonly maxDelay: number;
  private readonly release: ReleaseMode;
  private readonly slotCount: number;
  private readonly maxBytes: number;
  private readonly lengths: Int32Array;
  private readonly seqs: Int32Array; // extended sequence number held, or -1
  private readonly stamps: Float64Array;
  /** Per slot: the packet's timestamp unwrapped (relative to tsOrigin). */
  private readonly tsDeltas: Float64Array;

  private started = false;
  /** Extended sequence number of the next frame to release. */
  private nextSeq = 0;
  private highestSeq = 0;
  /** Expected RTP timestamp of the next frame to release (unwrapped, in ticks). */
  private nextTs = 0;
  /** Timestamps relative to the first packet's (tsOrigin), unwrapped: small exact numbers. */
  private tsOrigin = 0;
  private tsUnwrapped = 0;
  /** Transit baseline: min over packets of (arrival ms - media ms), creeping up slowly. */
  private baseline = 0;
  private prevTransit = 0;
  private jitterTicks = 0;
  private targetMs: number;

  /** Payload storage: a released frame's bytes are store[releasedOffset, releasedOffset + length). */
  readonly store: Uint8Array;
  /** Where in `store` the frame pop() just released begins. */
  releasedOffset = 0;
  /** The RTP timestamp of the frame just released (or concealed). */
  lastTimestamp = 0;
  readonly stats = { received: 0, released: 0, lost: 0, duplicates: 0, late: 0, resyncs: 0, rejected: 0 };

  constructor(opts: JitterBufferOptions) {
    this.clockRate = opts.clockRate;
    this.ticksPerFrame = opts.ticksPerFrame;
    this.frameMs = (opts.ticksPerFrame * 1000) / opts.clockRate;
    this.minDelay = opts.minDelayMs ?? JITTER_BUFFER_DEFAULTS.minDelayMs;
    this.maxDelay = opts.maxDelayMs ?? JITTER_BUFFER_DEFAULTS.maxDelayMs;
    if (!(this.minDelay > 0 && this.minDelay <= this.maxDelay))
      throw new RangeError('jitter buffer needs 0 < minDelayMs <= maxDelayMs');
    this.targetMs = Math.min(
      this.maxDelay,
      Math.max(this.minDelay, opts.initialDelayMs ?? JITTER_BUFFER_DEFAULTS.initialDelayMs),
    );
    this.release = opts.release ?? JITTER_BUFFER_DEFAULTS.release;
    // Enough slots for the longest delay plus as many frames again of reordering headroom.
    this.slotCount = Math.ceil((2 * this.maxDelay) / this.frameMs) + 2;
    this.maxBytes = opts.maxPayloadBytes;
    this.store = new Uint8Array(this.slotCount * this.maxBytes);
    this.lengths = new Int32Array(this.slotCount);
    this.seqs = new Int32Array(this.slotCount).fill(-1);
    this.stamps = new Float64Array(this.slotCount);
    this.tsDeltas = new Float64Array(this.slotCount);
  }

  /** Current target delay in ms (between minDelayMs and maxDelayMs). */
  get targetDelayMs(): number {
    return this.targetMs;
  }

  /** RFC 3550 A.8 interarrival jitter, in ms. */
  get jitterMs(): number {
    return (this.jitterTicks * 1000) / this.clockRate;
  }

  /** Frames held and waiting. */
  get depth(): number {
    let n = 0;
    for (let i = 0; i < this.slotCount; i++) if (this.seqs[i] >= 0) n++;
    return n;
  }

  /**
   * Stores one packet's payload (buf[packet.payloadOffset, + payloadLength)), received at `nowMs`. Returns false
   * when it is dropped (duplicate, too late, too large); the counters say why.
   */
  push(packet: JitterPacket, buf: Uint8Array, nowMs: number): boolean {
    const payloadLength = packet.payloadLength;
    if (payloadLength > this.maxBytes) {
      this.stats.rejected++;
      return false;
    }
    this.stats.received++;
    const seq16 = packet.sequenceNumber;
    if (!this.started) this.start(packet, nowMs);
    const d = seqDiff(this.highestSeq & 0xffff, seq16);
    let ext: number;
    if (d > MAX_DROPOUT || d < -MAX_MISORDER) {
      // RFC 3550 A.1: a large jump is the source restarting its sequence; start over from this packet.
      this.stats.resyncs++;
      this.clear();
      this.start(packet, nowMs);
      ext = this.highestSeq;
    } else {
      ext = this.highestSeq + d;
    }
    if (ext < this.nextSeq) {
      // Already released or concealed; a copy of a released one is a duplicate, otherwise it came too late.
      this.stats.late++;
      return false;
    }
    const slot = ext % this.slotCount;
    if (this.seqs[slot] === ext) {
      this.stats.duplicates++;
      return false;
    }
    if (ext - this.nextSeq >= this.slotCount) {
      // Too far ahead for the ring: give up on the oldest frames (they count as lost on release).
      this.skipTo(ext - this.slotCount + 1);
    }
    this.seqs[slot] = ext;
    this.lengths[slot] = payloadLength;
    const store = this.store;
    const base = slot * this.maxBytes;
    const from = packet.payloadOffset;
    for (let i = 0; i < payloadLength; i++) store[base + i] = buf[from + i];
    // Distance from the last released timestamp, modulo 2^32 (RFC 3550 5.1 timestamps wrap): a small integer,
    // unlike the uint32 itself.
    const tsDelta = (packet.timestamp - this.tsOrigin - this.tsUnwrapped) | 0;
    this.tsDeltas[slot] = tsDelta + this.tsUnwrapped;
    this.stamps[slot] = packet.timestamp;
    if (ext > this.highestSeq) this.highestSeq = ext;
    this.measure(tsDelta, nowMs);
    return true;
  }

  /**
   * Releases the next frame if it is due at `nowMs` and returns its length: its bytes are
   * store[releasedOffset, releasedOffset + length) until the next push. Returns JB_LOST when the next frame is
   * missing past its deadline (conceal one frame), or JB_NONE when nothing is due yet. Call it after every push
   * and on the tick, until it returns JB_NONE.
   */
  pop(nowMs: number): number {
    if (!this.started) return JB_NONE;
    const slot = this.nextSeq % this.slotCount;
    const present = this.seqs[slot] === this.nextSeq;
    const deadline = this.deadlineOf(this.nextTs);
    if (present) {
      if (this.release === 'at_deadline' && nowMs < deadline) return JB_NONE;
      const n = this.lengths[slot];
      this.releasedOffset = slot * this.maxBytes;
      this.seqs[slot] = -1;
      this.lastTimestamp = this.stamps[slot];
      // Follow the sender's timestamps (silence suppression may skip ahead).
      const unwrapped = this.tsDeltas[slot];
      this.tsUnwrapped = unwrapped;
      this.nextTs = unwrapped + this.ticksPerFrame;
      this.nextSeq++;
      this.stats.released++;
      this.decay();
      return n > 0 ? n : JB_LOST;
    }
    if (this.nextSeq > this.highestSeq) return JB_NONE; // nothing missing: just nothing received yet
    if (nowMs < deadline) return JB_NONE;
    this.lastTimestamp = (this.tsOrigin + this.nextTs) >>> 0;
    this.nextTs += this.ticksPerFrame;
    this.nextSeq++;
    this.stats.lost++;
    return JB_LOST;
  }

  /** Forgets everything (e.g. on hold/resume); the next packet starts the stream again. */
  reset(): void {
    this.clear();
    this.started = false;
  }

  private start(packet: JitterPacket, nowMs: number): void {
    this.started = true;
    // Extended numbers start one cycle up so that a few early reorderings stay non-negative.
    this.nextSeq = 0x10000 + packet.sequenceNumber;
    this.highestSeq = this.nextSeq;
    this.tsOrigin = packet.timestamp >>> 0;
    this.tsUnwrapped = 0;
    this.nextTs = 0;
    this.baseline = nowMs - this.mediaMs(this.tsUnwrapped);
    this.prevTransit = this.baseline;
  }

  private clear(): void {
    this.seqs.fill(-1);
  }

  private skipTo(ext: number): void {
    while (this.nextSeq < ext) {
      const slot = this.nextSeq % this.slotCount;
      if (this.seqs[slot] === this.nextSeq) this.seqs[slot] = -1;
      else this.stats.lost++;
      this.nextSeq++;
      this.nextTs += this.ticksPerFrame;
    }
  }

  private mediaMs(unwrappedTs: number): number {
    return (unwrappedTs * 1000) / this.clockRate;
  }

  private deadlineOf(unwrappedTs: number): number {
    return this.mediaMs(unwrappedTs) + this.baseline + this.targetMs;
  }

  /** `tsDelta`: the packet's timestamp relative to the last released (unwrapped) one. */
  private measure(tsDelta: number, nowMs: number): void {
    // Unwrap relative to the last released/expected position without disturbing the release cursor.
    const mediaMs = this.mediaMs(this.tsUnwrapped + tsDelta);
    const transit = nowMs - mediaMs;
    // RFC 3550 A.8: D(i,j) = (Rj - Ri) - (Sj - Si); J += (|D| - J) / 16 (here in ms, stored in ticks).
    const dTicks = (Math.abs(transit - this.prevTransit) * this.clockRate) / 1000;
    this.prevTransit = transit;
    this.jitterTicks += (dTicks - this.jitterTicks) * JITTER_GAIN;
    if (transit < this.baseline) this.baseline = transit;
    else this.baseline += Math.min(BASELINE_CREEP_MS, transit - this.baseline);
    const wanted = Math.min(this.maxDelay, Math.max(this.minDelay, JITTER_MULTIPLIER * this.jitterMs));
    // Rise at once (a late packet costs audio), fall slowly.
    if (wanted > this.targetMs) this.targetMs = wanted;
  }

  private decay(): void {
    const wanted = Math.min(this.maxDelay, Math.max(this.minDelay, JITTER_MULTIPLIER * this.jitterMs));
    if (wanted < this.targetMs) this.targetMs = Math.max(wanted, this.targetMs - DELAY_DECAY_MS_PER_FRAME);
  }
}
