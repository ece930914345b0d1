// The second leg of a bridged transfer in its media worker (docs/telephony.md, "Transfers"): the new leg's RTP
// port pair, opened before its INVITE goes out, and once it answers the relay between it and the caller's leg.
//
// Each direction goes through a byte ring in the receiving leg's codec: the caller's audio (released by its call's
// jitter buffer) into the ring the target reads, the target's (through this leg's own jitter buffer) into the ring
// the caller reads; G.711 µ-law and A-law are converted on the way when the legs differ. On the worker's pacing
// clock each leg then takes one 20 ms frame (silence while its ring is empty or refilling), so each leg's stream
// keeps its own continuous sequence numbers and timestamps. While the agent listens (keep_listening), the two
// directions are mixed into the conversation's input, and the agent's speech (post_transfer_message) is mixed into
// both. Digits for the target (the tool's dtmf) go out as RFC 4733 events on this leg after the answer, a `w` or
// `,` pausing half a second. RTCP is not sent on this leg (its reports are read and dropped).
// Everything per packet and per frame runs on buffers made at construction.
import type { CallAudioFormat } from '../conversation/host.js';
import { JitterBuffer, JB_LOST, JB_NONE } from '../media/jitter-buffer.js';
import { prefixView } from '../media/prefix-views.js';
import { alawDecodeInto, alawEncodeInto, mulawDecodeInto, mulawEncodeInto } from '../media/native/g711.js';
import { DTMF_EVENTS, TelephoneEventSender } from '../media/rfc4733.js';
import { createRtpPacketView, decodeView, RtpSender, RTP_HEADER_BYTES } from '../media/rtp.js';
import type { NativeUdpGroup, NativeUdpSocket, UdpIoError } from '../media/udp-native.js';
import type { CallMedia, MediaAddress } from '../workers/worker-protocol.js';
import { callCodec, encodedSilence } from './call-media.js';
import { RtpEndpoint } from './rtp-endpoint.js';

/** G.711: 160 samples (and bytes) per 20 ms frame at 8 kHz (RFC 3551 4.5.14). */
const FRAME_BYTES = 160;
/** What a ring holds at most: 400 ms; beyond it the oldest audio is dropped (the reader fell behind). */
const RING_FRAMES = 20;
/** A ring that ran dry is read again once it holds 40 ms: a jittery leg then plays smoothly rather than in gaps. */
const PREBUFFER_FRAMES = 2;
/** A `w` or `,` in the digits: half a second (25 frames) before the next digit. */
const PAUSE_FRAMES = 25;
const PAUSE_CHARS = 'wW,';
/** Target frames targetFrames() holds for a slow reader; older ones are dropped. */
const TARGET_FRAMES_QUEUED = 16;
const INT16_MAX = 32767;
const INT16_MIN = -32768;

type G711 = 'PCMU' | 'PCMA';

function decode(codec: G711, bytes: Uint8Array, offset: number, n: number, out: Int16Array): number {
  return codec === 'PCMU' ? mulawDecodeInto(bytes, out, offset, n) : alawDecodeInto(bytes, out, offset, n);
}

function encode(codec: G711, pcm: Int16Array, out: Uint8Array): number {
  return codec === 'PCMU' ? mulawEncodeInto(pcm, out) : alawEncodeInto(pcm, out);
}

const FORMAT_OF: Record<G711, CallAudioFormat> = { PCMU: 'mulaw_8000', PCMA: 'alaw_8000' };

/** Encoded audio of one direction, in the reading leg's codec; the writer converts from its own. */
class ByteRing {
  private readonly buf = new Uint8Array(FRAME_BYTES * RING_FRAMES);
  private readAt = 0;
  private size = 0;
  private primed = false;
  /** Bytes dropped because the reader fell behind. */
  overflow = 0;

  write(bytes: Uint8Array, offset: number, n: number): void {
    const cap = this.buf.length;
    for (let i = 0; i < n; i++) {
      if (this.size === cap) {
        this.readAt = (this.readAt + 1) % cap;
        this.size--;
        this.overflow++;
      }
      this.buf[(this.readAt + this.size) % cap] = bytes[offset + i];
      this.size++;
    }
  }

  /** One frame into `out`; false (nothing read) while the ring is empty or refilling. */
  readFrame(out: Uint8Array): boolean {
    if (!this.primed) {
      if (this.size < FRAME_BYTES * PREBUFFER_FRAMES) return false;
      this.primed = true;
    }
    if (this.size < FRAME_BYTES) {
      this.primed = false;
      return false;
    }
    const cap = this.buf.length;
    for (let i = 0; i < FRAME_BYTES; i++) out[i] = this.buf[(this.readAt + i) % cap];
    this.readAt = (this.readAt + FRAME_BYTES) % cap;
    this.size -= FRAME_BYTES;
    return true;
  }

  clear(): void {
    this.readAt = 0;
    this.size = 0;
    this.primed = false;
  }
}

/** What the leg counts (logged when it closes, read by tests). */
export interface LegCounters {
  /** RTP packets received from the target after the answer, and of them those relayed on. */
  received: number;
  /** Frames sent to the target and to the caller with relayed audio in them (not silence). */
  relayedToTarget: number;
  relayedToCaller: number;
  digitsSent: number;
  malformed: number;
  wrongSource: number;
}

export class TransferLeg {
  readonly endpoint: RtpEndpoint;
  readonly rtpPort: number;
  readonly counters: LegCounters = {
    received: 0,
    relayedToTarget: 0,
    relayedToCaller: 0,
    digitsSent: 0,
    malformed: 0,
    wrongSource: 0,
  };
  /**
   * The target answered: its audio is received (targetFrames() reads it). Not yet relayed while detect_voicemail
   * screens the answer: the caller hears neither the target nor the target the caller until bridge().
   */
  answered = false;
  /** The target answered and the relay runs. */
  bridged = false;
  /** The agent hears both parties and is heard by both (keep_listening). */
  listening = false;
  bridgedAtMs = 0;
  /**
   * The hook point of the answering-machine detector (detect_voicemail): the target's audio as it arrives after the
   * answer, decoded (8 kHz), lent for the call. Decoding happens only while it is set.
   */
  onTargetAudio: ((pcm: Int16Array) => void) | null = null;

  private media: CallMedia | null = null;
  private targetCodec: G711 = 'PCMU';
  private sender: RtpSender | null = null;
  private events: TelephoneEventSender | null = null;
  private jb: JitterBuffer | null = null;
  private markerPending = true;
  private readonly view = createRtpPacketView();
  /** The caller's audio in the target's codec, and the target's in the caller's. */
  private readonly toTarget = new ByteRing();
  private readonly toCaller = new ByteRing();
  private readonly targetFrame = new Uint8Array(FRAME_BYTES);
  private readonly callerFrame = new Uint8Array(FRAME_BYTES);
  private readonly mixFrame = new Uint8Array(FRAME_BYTES);
  private readonly agentFrame = new Uint8Array(FRAME_BYTES);
  private agentPending = false;
  private readonly pcmA = new Int16Array(FRAME_BYTES * 6);
  private readonly pcmB = new Int16Array(FRAME_BYTES);
  private readonly pcmAgent = new Int16Array(FRAME_BYTES);
  private readonly converted = new Uint8Array(FRAME_BYTES * 6);
  private readonly pcmViews = new Map<number, Int16Array>();
  private silenceTarget: Uint8Array = encodedSilence('mulaw_8000');
  private readonly silenceCaller: Uint8Array;
  /** Digits still to send: each a key, or a pause of PAUSE_FRAMES. */
  private digits = '';
  private pauseFrames = 0;
  private closed = false;
  /** targetFrames()'s reader waiting for a frame (or the end). */
  private wakeReader: (() => void) | null = null;

  private constructor(
    group: NativeUdpGroup,
    host: string,
    rtpPort: number,
    private readonly callerCodec: G711,
    private readonly now: () => number,
    onError: (err: UdpIoError) => void,
  ) {
    this.rtpPort = rtpPort;
    this.endpoint = RtpEndpoint.open(group, host, rtpPort, callCodec(callerCodec).maxPayloadBytes, onError);
    this.silenceCaller = encodedSilence(FORMAT_OF[callerCodec]);
    this.endpoint.rtp.onBatch((count, socket) => this.receive(count, socket));
    // RFC 3550 6: the target's reports are read (the socket drained) and not used.
    this.endpoint.rtcp.onBatch(() => undefined);
  }

  /**
   * Binds the leg's ports (`rtpPort` and the one above). The caller's leg must be G.711: Parley transcodes between
   * µ-law and A-law only. Throws UdpIoError when a port cannot be bound, RangeError for another codec.
   */
  static open(
    group: NativeUdpGroup,
    host: string,
    rtpPort: number,
    callerCodec: CallMedia['codec'],
    now: () => number,
    onError: (err: UdpIoError) => void,
  ): TransferLeg {
    if (callerCodec !== 'PCMU' && callerCodec !== 'PCMA')
      throw new RangeError(`a bridged transfer needs G.711 on the caller's leg, not ${callerCodec}`);
    return new TransferLeg(group, host, rtpPort, callerCodec, now, onError);
  }

  /**
   * The target answered with `media` at `remote`: its audio is received from now on, and nothing is relayed yet.
   * Again after unanswer(): a new dial's answer.
   */
  answer(remote: MediaAddress | null, media: CallMedia): void {
    if (media.codec !== 'PCMU' && media.codec !== 'PCMA')
      throw new RangeError(`the transfer target answered ${media.codec}; Parley bridges G.711 only`);
    this.media = media;
    this.targetCodec = media.codec;
    this.silenceTarget = encodedSilence(FORMAT_OF[media.codec]);
    this.endpoint.setRemote(remote);
    const c = callCodec(media.codec);
    this.sender = new RtpSender({ payloadType: media.payloadType });
    this.events =
      media.telephoneEventPayloadType === null
        ? null
        : new TelephoneEventSender(this.sender, {
            payloadType: media.telephoneEventPayloadType,
            clockRate: c.clockRate,
            ticksPerPacket: c.ticksPerFrame,
          });
    this.jb = new JitterBuffer({
      clockRate: c.clockRate,
      ticksPerFrame: c.ticksPerFrame,
      maxPayloadBytes: c.maxPayloadBytes,
      release: 'on_arrival',
    });
    this.markerPending = true;
    this.answered = true;
  }

  /** The answer was not taken (an answering machine): its audio is no longer received; the ports stay open. */
  unanswer(): void {
    this.answered = false;
    this.onTargetAudio = null;
    this.media = null;
    this.jb = null;
    this.sender = null;
    this.events = null;
    this.endpoint.setRemote(null);
  }

  /**
   * The relay starts (answering first with `media` at `remote` unless answer() already did), the digits (if any)
   * going out first.
   */
  bridge(remote: MediaAddress | null, media: CallMedia, digits: string | null, listening: boolean): void {
    if (!this.answered) this.answer(remote, media);
    this.digits = digits ?? '';
    this.listening = listening;
    this.bridgedAtMs = this.now();
    this.bridged = true;
  }

  /** The answer's media while answered. */
  get answeredMedia(): CallMedia | null {
    return this.media;
  }

  /** Whether the digits can go out as RFC 4733: the target negotiated telephone-event. */
  get sendsDigits(): boolean {
    return this.events !== null;
  }

  /** The caller's audio (its codec), as its jitter buffer releases it. */
  fromCaller(bytes: Uint8Array, offset: number, n: number): void {
    if (!this.bridged) return;
    this.convertInto(this.toTarget, this.callerCodec, this.targetCodec, bytes, offset, n);
  }

  /** One frame of the agent's speech (the caller's codec): heard by both parties while the agent listens. */
  fromAgent(frame: Uint8Array): boolean {
    if (!this.listening || this.agentPending || frame.length !== FRAME_BYTES) return true;
    this.agentFrame.set(frame);
    this.agentPending = true;
    return true;
  }

  /**
   * Once per clock frame (the caller's call's frame): sends the target its frame (the caller's audio, the agent's
   * mixed in; or a digit), gives the conversation the mix of both parties while it listens, and returns the frame
   * for the caller (the target's audio, the agent's mixed in).
   */
  frame(pushToAgent: ((bytes: Uint8Array) => void) | null): Uint8Array {
    const fromCaller = this.toTarget.readFrame(this.targetFrame);
    if (!fromCaller) this.targetFrame.set(this.silenceTarget);
    const fromTarget = this.toCaller.readFrame(this.callerFrame);
    if (!fromTarget) this.callerFrame.set(this.silenceCaller);
    if (fromCaller) this.counters.relayedToTarget++;
    if (fromTarget) this.counters.relayedToCaller++;
    if (this.listening && pushToAgent !== null) {
      // Both parties, in the caller's codec, as the agent's input.
      decode(this.targetCodec, this.targetFrame, 0, FRAME_BYTES, this.pcmB);
      decode(this.callerCodec, this.callerFrame, 0, FRAME_BYTES, this.pcmA);
      mixInto(this.pcmA, this.pcmB);
      encode(this.callerCodec, prefixView(this.pcmViews, this.pcmA, FRAME_BYTES), this.mixFrame);
      pushToAgent(this.mixFrame);
    }
    if (this.agentPending) {
      this.agentPending = false;
      decode(this.callerCodec, this.agentFrame, 0, FRAME_BYTES, this.pcmAgent);
      decode(this.callerCodec, this.callerFrame, 0, FRAME_BYTES, this.pcmA);
      mixInto(this.pcmA, this.pcmAgent);
      encode(this.callerCodec, prefixView(this.pcmViews, this.pcmA, FRAME_BYTES), this.callerFrame);
      decode(this.targetCodec, this.targetFrame, 0, FRAME_BYTES, this.pcmB);
      mixInto(this.pcmB, this.pcmAgent);
      encode(this.targetCodec, this.pcmB, this.targetFrame);
    }
    this.sendTarget();
    return this.callerFrame;
  }

  private sendTarget(): void {
    const sender = this.sender;
    if (
      sender === null ||
      !this.endpoint.hasRemote ||
      this.media?.direction === 'sendonly' ||
      this.media?.direction === 'inactive'
    ) {
      this.sender?.advanceTimestamp(FRAME_BYTES);
      return;
    }
    const events = this.events;
    if (events !== null) {
      if (!events.active) this.nextDigit(events);
      if (events.active) {
        // RFC 4733 2.5.1: one event packet per 20 ms; the stream's timestamp advances as for audio.
        const n = events.writeTick(this.endpoint.eventPacket);
        if (n > 0) this.endpoint.queueEvent(n);
        sender.advanceTimestamp(FRAME_BYTES);
        return;
      }
    }
    const packet = this.endpoint.audioPacket;
    packet.set(this.targetFrame, RTP_HEADER_BYTES);
    sender.writeNext(packet, this.markerPending);
    this.markerPending = false;
    this.endpoint.queueAudio(RTP_HEADER_BYTES + FRAME_BYTES);
    sender.advanceTimestamp(FRAME_BYTES);
  }

  /** Queues the next digit of the tool's, after any pause before it. */
  private nextDigit(events: TelephoneEventSender): void {
    if (this.pauseFrames > 0) {
      this.pauseFrames--;
      return;
    }
    while (this.digits !== '') {
      const d = this.digits[0].toUpperCase();
      this.digits = this.digits.slice(1);
      if (PAUSE_CHARS.includes(d)) {
        this.pauseFrames = PAUSE_FRAMES;
        return;
      }
      if (DTMF_EVENTS.includes(d)) {
        events.send(d);
        this.counters.digitsSent++;
        return;
      }
    }
  }

  /** Digits still to play (the relay carries audio once they are out). */
  get digitsPending(): boolean {
    return this.digits !== '' || this.pauseFrames > 0 || (this.events?.active ?? false);
  }

  private convertInto(ring: ByteRing, from: G711, to: G711, bytes: Uint8Array, offset: number, n: number): void {
    if (from === to) {
      ring.write(bytes, offset, n);
      return;
    }
    const samples = decode(from, bytes, offset, Math.min(n, this.pcmA.length), this.pcmA);
    const written = encode(to, prefixView(this.pcmViews, this.pcmA, samples), this.converted);
    ring.write(this.converted, 0, written);
  }

  private receive(count: number, socket: NativeUdpSocket): void {
    const now = this.now();
    const slots = this.endpoint.rtpSlots;
    const media = this.media;
    const jb = this.jb;
    if (!this.answered || media === null || jb === null) return;
    for (let i = 0; i < count; i++) {
      const buf = slots[i];
      const v = this.view;
      if (socket.rxTruncated(i) || decodeView(buf, v, socket.rxLength(i)) !== 'ok') {
        this.counters.malformed++;
        continue;
      }
      // Digits from the target are not relayed (the caller's keypad is not the target's business, and back).
      if (v.payloadType !== media.payloadType) continue;
      if (!this.endpoint.admitRtp(socket.rxAddress(i), socket.rxPort(i))) {
        this.counters.wrongSource++;
        continue;
      }
      this.counters.received++;
      if (!jb.push(v, buf, now)) continue;
      for (;;) {
        const n = jb.pop(now);
        if (n === JB_NONE) break;
        if (n === JB_LOST) continue;
        const at = jb.releasedOffset;
        if (this.bridged) this.convertInto(this.toCaller, this.targetCodec, this.callerCodec, jb.store, at, n);
        const hook = this.onTargetAudio;
        if (hook !== null) {
          const samples = decode(this.targetCodec, jb.store, at, Math.min(n, this.pcmA.length), this.pcmA);
          hook(prefixView(this.pcmViews, this.pcmA, samples));
        }
      }
    }
  }

  /**
   * The target's audio from the answer on, as 20 ms frames of 8 kHz PCM (what an answering-machine detector reads:
   * detect_voicemail); ends when the leg closes. A frame is lent until the next is read; a reader more than
   * TARGET_FRAMES_QUEUED frames behind loses the oldest. Sets onTargetAudio (one reader at a time).
   */
  targetFrames(): AsyncIterable<Int16Array> {
    // The queue, and the frame lent to the reader just before it: never written while lent.
    const pool = Array.from({ length: TARGET_FRAMES_QUEUED + 2 }, () => new Int16Array(FRAME_BYTES));
    let head = 0;
    let size = 0;
    const wake = (): void => {
      const w = this.wakeReader;
      this.wakeReader = null;
      w?.();
    };
    this.onTargetAudio = (pcm) => {
      for (let at = 0; at + FRAME_BYTES <= pcm.length; at += FRAME_BYTES) {
        if (size === TARGET_FRAMES_QUEUED) {
          head = (head + 1) % pool.length;
          size--;
        }
        pool[(head + size) % pool.length].set(pcm.subarray(at, at + FRAME_BYTES));
        size++;
      }
      wake();
    };
    const isClosed = (): boolean => this.closed;
    const nextFrame = (): Promise<void> => new Promise<void>((resolve) => (this.wakeReader = resolve));
    return {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          while (size === 0) {
            if (isClosed()) return;
            await nextFrame();
          }
          const lent = head;
          head = (head + 1) % pool.length;
          size--;
          yield pool[lent];
        }
      },
    };
  }

  /** Seconds since the answer (0 before it). */
  durationSec(): number {
    return this.bridged ? Math.round((this.now() - this.bridgedAtMs) / 100) / 10 : 0;
  }

  /** The relay stops and the ports close. Safe twice. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.onTargetAudio = null;
    const wake = this.wakeReader;
    this.wakeReader = null;
    wake?.();
    this.answered = false;
    this.bridged = false;
    this.listening = false;
    this.toCaller.clear();
    this.toTarget.clear();
    this.endpoint.close();
  }
}

/** a += b, clipped to 16 bits. */
function mixInto(a: Int16Array, b: Int16Array): void {
  for (let i = 0; i < FRAME_BYTES; i++) {
    const s = a[i] + b[i];
    a[i] = s > INT16_MAX ? INT16_MAX : s < INT16_MIN ? INT16_MIN : s;
  }
}
