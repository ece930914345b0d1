// RFC 4733 telephone events (DTMF) in RTP: the send side as a small state machine driven by the pacing tick,
// and the receive side deduplicating events by RTP timestamp. No allocation per packet.
import { RTP_HEADER_BYTES, tsDiff, type RtpSender } from './rtp.js';

/** RFC 4733 2.3: event (8 bits), E (1), R (1), volume (6), duration (16): four octets. */
export const TELEPHONE_EVENT_PAYLOAD_BYTES = 4;
/** RFC 4733 2.3.3: E bit, the end of the event. */
const END_BIT = 0x80;
/** RFC 4733 2.3.4: volume is 0 to 63 (-dBm0); DTMF below -36 dBm0 is not valid, 10 is a common sending level. */
export const TELEPHONE_EVENT_DEFAULT_VOLUME = 10;
const VOLUME_MASK = 0x3f;
/** RFC 4733 2.5.1.4: the final packet of an event is sent three times in all. */
export const TELEPHONE_EVENT_END_REPEATS = 3;
/** RFC 4733 2.3.5: duration is an unsigned 16-bit count of timestamp units. */
export const TELEPHONE_EVENT_MAX_DURATION = 0xffff;
/** ITU-T Q.24 / common practice: a sent digit lasts 100 ms unless asked otherwise (40 ms is the Q.24 minimum). */
export const DTMF_DEFAULT_DURATION_MS = 100;
/** RFC 4733 3.2 table 7: DTMF events 0-9, *, #, A-D are codes 0-15. */
export const DTMF_EVENTS = '0123456789*#ABCD';

export type DtmfDigit = '0' | '1' | '2' | '3' | '4' | '5' | '6' | '7' | '8' | '9' | '*' | '#' | 'A' | 'B' | 'C' | 'D';

export function dtmfEventCode(digit: string): number {
  const code = DTMF_EVENTS.indexOf(digit.toUpperCase());
  if (code < 0 || digit.length !== 1) throw new RangeError(`not a DTMF digit: ${JSON.stringify(digit)}`);
  return code;
}

export function dtmfDigit(code: number): DtmfDigit | undefined {
  return code >= 0 && code < DTMF_EVENTS.length ? (DTMF_EVENTS[code] as DtmfDigit) : undefined;
}

/** The fields of one telephone-event payload, read in place into a reused object. */
export interface TelephoneEvent {
  event: number;
  end: boolean;
  volume: number;
  duration: number;
}

export function createTelephoneEvent(): TelephoneEvent {
  return { event: 0, end: false, volume: 0, duration: 0 };
}

/** Reads a telephone-event payload at buf[offset, offset+length); false when it is too short. */
export function readTelephoneEvent(buf: Uint8Array, offset: number, length: number, out: TelephoneEvent): boolean {
  if (length < TELEPHONE_EVENT_PAYLOAD_BYTES) return false;
  out.event = buf[offset];
  out.end = (buf[offset + 1] & END_BIT) !== 0;
  out.volume = buf[offset + 1] & VOLUME_MASK;
  out.duration = (buf[offset + 2] << 8) | buf[offset + 3];
  return true;
}

export function writeTelephoneEvent(
  out: Uint8Array,
  offset: number,
  event: number,
  end: boolean,
  volume: number,
  duration: number,
): number {
  out[offset] = event & 0xff;
  out[offset + 1] = (end ? END_BIT : 0) | (volume & VOLUME_MASK);
  out[offset + 2] = (duration >>> 8) & 0xff;
  out[offset + 3] = duration & 0xff;
  return TELEPHONE_EVENT_PAYLOAD_BYTES;
}

// ---------------------------------------------------------------------------------------------------------
// Send side.

type SendState =
  | { kind: 'idle' }
  | { kind: 'playing'; event: number; startTs: number; elapsed: number; total: number; first: boolean }
  | { kind: 'ending'; event: number; startTs: number; total: number; repeatsLeft: number };

/** 'tick': a packet is due (starts the next digit when idle); 'sent': the packet for the current state went out. */
type SendInput = 'tick' | 'sent';

/**
 * Sends queued digits as RFC 4733 events, one packet per 20 ms tick while a digit plays (the audio stream
 * pauses meanwhile). Per digit: the first packet has the marker bit (RFC 4733 2.5.1.1), every packet carries
 * the event's start timestamp and a growing duration (2.5.1.2), and the final packet, E bit set, goes out three
 * times with the same duration (2.5.1.4). Sequence numbers keep increasing through all of it (RFC 3550 5.1).
 */
export class TelephoneEventSender {
  private state: SendState = { kind: 'idle' };
  private readonly queue: { event: number; durationTicks: number }[] = [];

  constructor(
    private readonly rtp: RtpSender,
    private readonly opts: { payloadType: number; clockRate: number; ticksPerPacket: number; volume?: number },
  ) {}

  /** Queues digits to send, each `durationMs` long (rounded up to whole packets). */
  send(digits: string, durationMs: number = DTMF_DEFAULT_DURATION_MS): void {
    const ticks =
      Math.ceil((durationMs * this.opts.clockRate) / 1000 / this.opts.ticksPerPacket) * this.opts.ticksPerPacket;
    if (!(ticks > 0) || ticks > TELEPHONE_EVENT_MAX_DURATION)
      throw new RangeError(`DTMF duration ${durationMs} ms out of range`);
    const codes = Array.from(digits, dtmfEventCode);
    for (const event of codes) this.queue.push({ event, durationTicks: ticks });
  }

  /** True while a digit is playing or queued: the caller sends no audio packet on such ticks. */
  get active(): boolean {
    return this.state.kind !== 'idle' || this.queue.length > 0;
  }

  /** Drops queued digits (an ongoing one still ends properly, with its end packets). */
  clearQueue(): void {
    this.queue.length = 0;
  }

  /**
   * On a tick: writes the next event packet (header + payload) into `out` and returns its length, or 0 when no
   * digit is playing. The caller advances the stream timestamp every tick as usual.
   */
  writeTick(out: Uint8Array): number {
    this.state = this.transition(this.state, 'tick');
    const s = this.state;
    if (s.kind === 'idle') return 0;
    const volume = this.opts.volume ?? TELEPHONE_EVENT_DEFAULT_VOLUME;
    let n: number;
    if (s.kind === 'playing') {
      n = this.rtp.writeNext(out, s.first, this.opts.payloadType, s.startTs);
      n += writeTelephoneEvent(out, RTP_HEADER_BYTES, s.event, false, volume, s.elapsed);
    } else {
      n = this.rtp.writeNext(out, false, this.opts.payloadType, s.startTs);
      n += writeTelephoneEvent(out, RTP_HEADER_BYTES, s.event, true, volume, s.total);
    }
    this.state = this.transition(s, 'sent');
    return n;
  }

  private transition(s: SendState, input: SendInput): SendState {
    const step = this.opts.ticksPerPacket;
    switch (s.kind) {
      case 'idle': {
        if (input !== 'tick') return s;
        const next = this.queue.shift();
        if (!next) return s;
        // RFC 4733 2.5.1.1: the event's timestamp is the media time at which it starts.
        return {
          kind: 'playing',
          event: next.event,
          startTs: this.rtp.header.timestamp,
          elapsed: step,
          total: next.durationTicks,
          first: true,
        };
      }
      case 'playing': {
        if (input !== 'sent') return s;
        s.first = false;
        s.elapsed += step;
        if (s.elapsed < s.total) return s;
        return {
          kind: 'ending',
          event: s.event,
          startTs: s.startTs,
          total: s.total,
          repeatsLeft: TELEPHONE_EVENT_END_REPEATS,
        };
      }
      case 'ending': {
        if (input !== 'sent') return s;
        s.repeatsLeft--;
        return s.repeatsLeft > 0 ? s : { kind: 'idle' };
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Receive side.

/**
 * Turns received telephone-event payloads into digits. Every packet of one event shares its RTP timestamp
 * (RFC 4733 2.5.1.1), so an event is reported once, on the first packet of a new timestamp, whatever
 * retransmissions and end repeats follow. Packets with a zero duration carry no event time (RFC 4733 2.3.5)
 * and are ignored. Source filtering is the caller's: RFC 4733 events are accepted from any source port of the
 * signalled peer address (some gateways send them from another port than the audio).
 */
export class TelephoneEventReceiver {
  private lastTs = 0;
  private haveLast = false;
  private lastEnded = false;
  private readonly ev = createTelephoneEvent();

  /** Digits reported, and duplicates/zero-duration packets dropped (for the call's counters). */
  digits = 0;
  duplicates = 0;
  ignored = 0;

  /**
   * Returns the event code of a newly started event (0-15 for DTMF), or -1 for a packet of an event already
   * reported, a zero-duration packet, or a malformed payload.
   */
  receive(buf: Uint8Array, payloadOffset: number, payloadLength: number, timestamp: number): number {
    const ev = this.ev;
    if (!readTelephoneEvent(buf, payloadOffset, payloadLength, ev) || ev.duration === 0) {
      this.ignored++;
      return -1;
    }
    if (this.haveLast && timestamp === this.lastTs) {
      if (ev.end) this.lastEnded = true;
      this.duplicates++;
      return -1;
    }
    // A late packet of an older event (reordered past the next one) is not a new event.
    if (this.haveLast && tsDiff(this.lastTs, timestamp) < 0) {
      this.duplicates++;
      return -1;
    }
    this.haveLast = true;
    this.lastTs = timestamp;
    this.lastEnded = ev.end;
    this.digits++;
    return ev.event;
  }

  /** Whether the last reported event has seen its end packet. */
  get lastEventEnded(): boolean {
    return this.lastEnded;
  }

  reset(): void {
    this.haveLast = false;
    this.lastEnded = false;
  }
}
