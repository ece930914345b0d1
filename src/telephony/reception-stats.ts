// Reception statistics of one RTP source (RFC 3550 A.1, A.3, A.8): the extended highest sequence number, packets
// expected and received, loss (cumulative and since the last report) and interarrival jitter, for the call's RTCP
// report blocks and its record. Updated per packet without allocating; timestamps are read from the packet view,
// never passed as arguments (a uint32 beyond V8's small integers would be boxed).
import type { RtpHeader } from '../media/rtp.js';
import type { ReportBlock } from './rtcp.js';
import type { RtpStreamStats } from '../schemas/conversations.js';

/** RFC 3550 A.1: a jump of more than MAX_DROPOUT ahead, or MAX_MISORDER behind, is not the same run. */
const MAX_DROPOUT = 3000;
const MAX_MISORDER = 100;
const SEQ_MOD = 0x10000;
/** RFC 3550 A.8: J += (|D| - J) / 16. */
const JITTER_GAIN = 1 / 16;

/**
 * One source's counters. A source is what the call latched to (signalling and symmetric RTP chose it), so the
 * probation of RFC 3550 A.1 (two packets in sequence before a source counts) is not applied: the first packet counts.
 */
export class ReceptionStats {
  /** The source's SSRC; -1 before its first packet. */
  ssrc = -1;
  private baseSeq = 0;
  private maxSeq = 0;
  private cycles = 0;
  private badSeq = SEQ_MOD + 1;
  received = 0;
  private expectedPrior = 0;
  private receivedPrior = 0;
  /** RFC 3550 A.8 jitter, in timestamp units. */
  private jitter = 0;
  private lastTimestamp = 0;
  private lastArrivalMs = 0;
  private haveTransit = false;

  constructor(private readonly clockRate: number) {}

  /** Forgets the source (a new SSRC starts afresh, RFC 3550 8.2). */
  reset(): void {
    this.ssrc = -1;
    this.received = 0;
    this.expectedPrior = 0;
    this.receivedPrior = 0;
    this.jitter = 0;
    this.haveTransit = false;
  }

  /** One packet of the source, arrived at `arrivalMs` (a monotonic clock). */
  update(p: RtpHeader, arrivalMs: number): void {
    if (p.ssrc !== this.ssrc) {
      this.reset();
      this.ssrc = p.ssrc;
      this.initSeq(p.sequenceNumber);
    } else if (!this.updateSeq(p.sequenceNumber)) {
      return;
    }
    this.received++;
    // RFC 3550 A.8: D(i, j) = (Rj - Ri) - (Sj - Si), arrival converted to timestamp units; consecutive arrivals.
    if (this.haveTransit) {
      const sent = (p.timestamp - this.lastTimestamp) | 0;
      const d = ((arrivalMs - this.lastArrivalMs) * this.clockRate) / 1000 - sent;
      this.jitter += ((d < 0 ? -d : d) - this.jitter) * JITTER_GAIN;
    }
    this.haveTransit = true;
    this.lastTimestamp = p.timestamp;
    this.lastArrivalMs = arrivalMs;
  }

  private initSeq(seq: number): void {
    this.baseSeq = seq;
    this.maxSeq = seq;
    this.badSeq = SEQ_MOD + 1;
    this.cycles = 0;
  }

  /** RFC 3550 A.1 update_seq without probation: false for a packet that restarts nothing and is not counted. */
  private updateSeq(seq: number): boolean {
    const udelta = (seq - this.maxSeq) & 0xffff;
    if (udelta < MAX_DROPOUT) {
      // In order, with a permissible gap; wrapped: one more cycle.
      if (seq < this.maxSeq) this.cycles += SEQ_MOD;
      this.maxSeq = seq;
    } else if (udelta <= SEQ_MOD - MAX_MISORDER) {
      // A very large jump: the source restarted, if the next packet follows this one.
      if (seq !== this.badSeq) {
        this.badSeq = (seq + 1) & 0xffff;
        return false;
      }
      this.initSeq(seq);
      this.received = 0;
      this.expectedPrior = 0;
      this.receivedPrior = 0;
    }
    // Otherwise a duplicate or reordered packet: counted, the highest unchanged.
    return true;
  }

  get extendedHighestSeq(): number {
    return this.cycles + this.maxSeq;
  }

  /** RFC 3550 A.3. */
  get expected(): number {
    return this.ssrc < 0 ? 0 : this.extendedHighestSeq - this.baseSeq + 1;
  }

  get lost(): number {
    return this.expected - this.received;
  }

  get jitterMs(): number {
    return (this.jitter * 1000) / this.clockRate;
  }

  /**
   * Fills `out` for a report about this source (RFC 3550 6.4.1, A.3) and starts the next interval. `lastSr` and
   * `delaySinceLastSr` are the caller's (it keeps the peer's sender reports). False before any packet (no block).
   */
  reportInto(out: ReportBlock): boolean {
    if (this.ssrc < 0) return false;
    const expected = this.expected;
    const expectedInterval = expected - this.expectedPrior;
    const receivedInterval = this.received - this.receivedPrior;
    this.expectedPrior = expected;
    this.receivedPrior = this.received;
    const lostInterval = expectedInterval - receivedInterval;
    out.ssrc = this.ssrc;
    out.fractionLost =
      expectedInterval === 0 || lostInterval <= 0 ? 0 : Math.floor((lostInterval * 256) / expectedInterval);
    out.cumulativeLost = this.lost;
    out.extendedHighestSeq = this.extendedHighestSeq >>> 0;
    out.jitter = Math.floor(this.jitter) >>> 0;
    return true;
  }

  /** The record's view of the stream (analysis.rtp.inbound). */
  summary(): RtpStreamStats {
    const expected = this.expected;
    const lost = this.lost;
    return {
      packets_expected: expected,
      packets_received: this.received,
      packets_lost: lost,
      loss_fraction: expected > 0 ? Math.max(0, lost) / expected : 0,
      jitter_ms: round3(this.jitterMs),
    };
  }
}

/** The record's view of Parley's stream from the peer's last report block (analysis.rtp.outbound). */
export function peerSummary(block: ReportBlock, firstSequence: number, clockRate: number): RtpStreamStats {
  // The peer's extended highest counts cycles from its first packet, which is ours numbered firstSequence.
  const expected = Math.max(0, block.extendedHighestSeq - firstSequence + 1);
  const lost = block.cumulativeLost;
  return {
    packets_expected: expected,
    packets_received: Math.max(0, expected - lost),
    packets_lost: lost,
    loss_fraction: expected > 0 ? Math.max(0, lost) / expected : 0,
    jitter_ms: round3((block.jitter * 1000) / clockRate),
  };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
