// The inbound chain, run per packet as it arrives, never held for a tick (docs/ARCHITECTURE.md, "Media pipeline"):
//   RTP depacketize -> source check -> jitter buffer (released on arrival, gaps concealed at their deadline)
//   -> decode -> resample to the engine rate -> VAD hook -> engine.
// RFC 4733 telephone events branch off after the source check. The same decode -> resample -> VAD -> sink
// tail (InboundAudio) serves the STS socket, whose audio needs no RTP or jitter buffer.
// Every buffer is allocated at construction; nothing per packet.
import { createDecoder, type Decoder } from './codec.js';
import { formatInfo, FRAME_MS, type AudioFormat } from './format.js';
import { JitterBuffer, JB_LOST, JB_NONE, type JitterBufferOptions } from './jitter-buffer.js';
import { Resampler, type ResamplerRate } from './native/resampler.js';
import { LossConcealer } from './plc.js';
import { dtmfDigit, TelephoneEventReceiver, type DtmfDigit } from './rfc4733.js';
import { createRtpPacketView, decodeView, type RtpPacketView } from './rtp.js';
import { prefixView } from './prefix-views.js';

/** What a VAD offers the chain (native Vad satisfies it): feed a frame, get event bits back. */
export interface VadHook {
  process(frame: Int16Array): number;
}

export interface InboundSink {
  /** One frame of audio at the engine rate, in order; `concealed` for a frame made up for a lost packet. */
  onAudio(frame: Int16Array, concealed: boolean): void;
  /** VAD event bits for the frame just delivered (only called when non-zero). */
  onVad?(events: number): void;
  onDtmf?(digit: DtmfDigit): void;
}

export interface InboundAudioOptions {
  format: AudioFormat;
  engineRate: ResamplerRate;
  /** Largest payload (bytes) one call brings; default 60 ms of the format. */
  maxPayloadBytes?: number;
  vad?: VadHook;
  sink: InboundSink;
  /**
   * Whether lost frames may be concealed (pushLost), which costs a copy of every good frame. Default true; the STS
   * socket passes false: its frames come over TCP and none is ever reported lost.
   */
  concealment?: boolean;
}

/** decode -> (conceal) -> resample -> VAD -> sink, for one stream. */
export class InboundAudio {
  private readonly decoder: Decoder;
  /** null without concealment. */
  private readonly plc: LossConcealer | null;
  private readonly resampler: Resampler | undefined;
  private readonly pcm: Int16Array;
  /** pcm.length, for the per-frame check of pushSamples without loading pcm. */
  private readonly maxSamples: number;
  private readonly resampled: Int16Array;
  private readonly frameSamples: number;
  private readonly sink: InboundSink;
  private readonly vad: VadHook | undefined;
  /** Frames delivered to the sink (concealed included). */
  frames = 0;
  concealed = 0;

  constructor(private readonly opts: InboundAudioOptions) {
    const info = formatInfo(opts.format);
    this.decoder = createDecoder(opts.format);
    const maxBytes = opts.maxPayloadBytes ?? (info.bytesPerFrame > 0 ? info.bytesPerFrame * 3 : 4000);
    const maxSamples = Math.max(this.decoder.maxSamples(maxBytes), info.samplesPerFrame);
    this.frameSamples = info.samplesPerFrame;
    this.pcm = new Int16Array(maxSamples);
    this.maxSamples = maxSamples;
    this.lastDecodedLength = maxSamples;
    this.lastDecoded = this.pcm;
    this.sink = opts.sink;
    this.vad = opts.vad;
    this.plc = opts.concealment === false ? null : new LossConcealer(info.samplesPerFrame);
    if (info.sampleRate !== opts.engineRate) {
      this.resampler = new Resampler(info.sampleRate as ResamplerRate, opts.engineRate, maxSamples);
      this.resampled = new Int16Array(this.resampler.maxOutput(maxSamples));
    } else {
      this.resampled = this.pcm;
    }
  }

  get maxPayloadSamples(): number {
    return this.pcm.length;
  }

  /** A received payload buf[offset, offset + length). */
  pushPayload(buf: Uint8Array, length: number, offset = 0): void {
    const decoded = this.decoded(this.decoder.decodeInto(buf, length, this.pcm, offset));
    this.plc?.process(decoded, decoded);
    this.deliver(decoded, false);
  }

  /** Whether payloads of this format may be handed on as samples in place (pushSamples): see Decoder.samplesInPlace. */
  get samplesInPlace(): boolean {
    return this.decoder.samplesInPlace;
  }

  /**
   * Decoded PCM at the format's rate, lent for this call, delivered as it is (no copy): what pushPayload delivers
   * for a payload whose bytes are these samples. At most maxPayloadSamples.
   */
  pushSamples(pcm: Int16Array): void {
    if (pcm.length > this.maxSamples)
      throw new RangeError(`PCM payload of ${pcm.length} samples into ${this.maxSamples}`);
    this.plc?.process(pcm, pcm);
    this.deliver(pcm, false);
  }

  /** Already-decoded PCM at the format's rate (e.g. a test or a local source). */
  pushPcm(pcm: Int16Array): void {
    this.pcm.set(pcm, 0);
    const copy = this.decoded(pcm.length);
    this.plc?.process(copy, copy);
    this.deliver(copy, false);
  }

  /** One frame lost: conceal it. Throws on a stream made without concealment. */
  pushLost(): void {
    if (!this.plc) throw new Error('inbound audio: this stream was made without loss concealment');
    const n = this.plc.conceal(this.pcm);
    this.concealed++;
    this.deliver(this.decoded(n), true);
  }

  reset(): void {
    this.plc?.reset();
    this.resampler?.reset();
  }

  destroy(): void {
    this.resampler?.destroy();
  }

  private deliver(input: Int16Array, concealed: boolean): void {
    let out = input;
    if (this.resampler) {
      const m = this.resampler.process(input, this.resampled);
      out = prefixView(this.resampledViews, this.resampled, m);
    }
    if (out.length === 0) return;
    this.frames++;
    this.sink.onAudio(out, concealed);
    if (this.vad) {
      const ev = this.vad.process(out);
      if (ev !== 0) this.sink.onVad?.(ev);
    }
  }

  // Views of the first n samples, made once per distinct n (packets of one stream have one or two sizes); the
  // last one is kept at hand, so a stream of same-sized frames does not even look it up.
  private readonly pcmViews = new Map<number, Int16Array>();
  private readonly resampledViews = new Map<number, Int16Array>();
  private lastDecodedLength: number;
  private lastDecoded: Int16Array;
  private decoded(n: number): Int16Array {
    if (n !== this.lastDecodedLength) {
      this.lastDecoded = prefixView(this.pcmViews, this.pcm, n);
      this.lastDecodedLength = n;
    }
    return this.lastDecoded;
  }

  /** 20 ms at the format's rate. */
  get formatFrameSamples(): number {
    return this.frameSamples;
  }
}

export interface RtpInboundOptions {
  format: 'mulaw_8000' | 'alaw_8000';
  payloadType: number;
  /** RFC 4733 telephone-event payload type negotiated in SDP (commonly 101); none when absent. */
  telephoneEventPayloadType?: number;
  engineRate: ResamplerRate;
  /** The peer's signalled address; audio latches to its first source port (symmetric RTP, RFC 4961). */
  peerAddress?: string;
  /** Latch to this port from the start instead of the first packet's. */
  peerPort?: number;
  jitter?: Partial<Pick<JitterBufferOptions, 'minDelayMs' | 'maxDelayMs' | 'initialDelayMs'>>;
  vad?: VadHook;
  sink: InboundSink;
}

/** What became of one datagram: constant strings for the stream's counters. */
export type ReceiveResult =
  'audio' | 'dtmf' | 'dtmf_repeat' | 'rtcp' | 'malformed' | 'wrong_source' | 'unknown_payload_type' | 'dropped';

export class RtpInbound {
  private readonly view: RtpPacketView = createRtpPacketView();
  private readonly jb: JitterBuffer;
  readonly audio: InboundAudio;
  private readonly events = new TelephoneEventReceiver();
  private latchedPort: number;
  private ssrc = -1;
  readonly counters: Record<ReceiveResult, number> = {
    audio: 0,
    dtmf: 0,
    dtmf_repeat: 0,
    rtcp: 0,
    malformed: 0,
    wrong_source: 0,
    unknown_payload_type: 0,
    dropped: 0,
  };

  constructor(private readonly opts: RtpInboundOptions) {
    this.audio = new InboundAudio({ format: opts.format, engineRate: opts.engineRate, vad: opts.vad, sink: opts.sink });
    const info = formatInfo(opts.format);
    const maxBytes = this.audio.maxPayloadSamples; // G.711: a byte per sample
    this.jb = new JitterBuffer({
      clockRate: info.rtpClockRate,
      ticksPerFrame: (info.rtpClockRate * FRAME_MS) / 1000,
      maxPayloadBytes: maxBytes,
      release: 'on_arrival',
      ...opts.jitter,
    });
    this.latchedPort = opts.peerPort ?? -1;
  }

  get jitterBuffer(): JitterBuffer {
    return this.jb;
  }

  /** One datagram buf[0, length) from address:port at nowMs (performance.now() time base). */
  receive(buf: Uint8Array, length: number, address: string, port: number, nowMs: number): ReceiveResult {
    const r = this.classify(buf, length, address, port, nowMs);
    this.counters[r]++;
    return r;
  }

  /** On the tick: conceal gaps whose deadline passed. Returns frames delivered. */
  poll(nowMs: number): number {
    return this.drain(nowMs);
  }

  reset(): void {
    this.jb.reset();
    this.audio.reset();
    this.events.reset();
    this.ssrc = -1;
  }

  destroy(): void {
    this.audio.destroy();
  }

  private classify(buf: Uint8Array, length: number, address: string, port: number, nowMs: number): ReceiveResult {
    const v = this.view;
    const res = decodeView(buf, v, length);
    if (res === 'rtcp') return 'rtcp';
    if (res !== 'ok') return 'malformed';
    const peer = this.opts.peerAddress;
    if (peer !== undefined && address !== peer) return 'wrong_source';
    if (v.payloadType === this.opts.telephoneEventPayloadType) {
      // RFC 4733 events are taken from any source port of the peer: some gateways send them from another port.
      const code = this.events.receive(buf, v.payloadOffset, v.payloadLength, v.timestamp);
      if (code < 0) return 'dtmf_repeat';
      const digit = dtmfDigit(code);
      if (digit) this.opts.sink.onDtmf?.(digit);
      return 'dtmf';
    }
    if (v.payloadType !== this.opts.payloadType) return 'unknown_payload_type';
    if (this.latchedPort < 0) this.latchedPort = port;
    else if (port !== this.latchedPort) return 'wrong_source';
    if (v.ssrc !== this.ssrc) {
      // RFC 3550 8.2: a new SSRC is a new source (re-INVITE, transfer): start its stream afresh.
      if (this.ssrc !== -1) this.jb.reset();
      this.ssrc = v.ssrc;
    }
    if (!this.jb.push(v, buf, nowMs)) return 'dropped';
    this.drain(nowMs);
    return 'audio';
  }

  private drain(nowMs: number): number {
    let delivered = 0;
    for (;;) {
      const n = this.jb.pop(nowMs);
      if (n === JB_NONE) return delivered;
      if (n === JB_LOST) this.audio.pushLost();
      else this.audio.pushPayload(this.jb.store, n, this.jb.releasedOffset);
      delivered++;
    }
  }
}
