// The outbound chain, run on the pacing clock's tick (docs/ARCHITECTURE.md, "Media pipeline"):
//   engine audio queue -> time-stretch (audio_speed) -> background noise mix -> [recording hook]
//   -> resample to 8 kHz -> G.711 encode -> RTP packetize -> send
// The first stages run per stream in TypeScript (prepare); resample + encode run for every stream of the
// worker in one native call per codec per tick (OutboundBatch), encoding straight into each stream's packet
// buffer after its RTP header; then each stream writes its header and sends (finish).
// While RFC 4733 digits play, the stream sends telephone-event packets instead of audio and its queue waits.
import { formatInfo, FRAME_MS } from './format.js';
import { encodeBatch, G711_ALAW, G711_MULAW, type G711Codec } from './native/g711.js';
import { ResampleEncodeGroup, Resampler, type ResamplerRate } from './native/resampler.js';
import { NoiseMix, type NoiseBed } from './noise.js';
import type { PacedStream } from './pacing-clock.js';
import { SampleFifo } from './pipeline.js';
import { TelephoneEventSender } from './rfc4733.js';
import { RtpSender, RTP_HEADER_BYTES } from './rtp.js';
import { TimeStretch } from './time-stretch.js';

/** Engine audio a stream may hold ahead of playback; engines that send faster must wait (enqueue returns less). */
export const OUTBOUND_DEFAULT_QUEUE_MS = 4000;
/** Chunk fed to the time-stretcher at a time (one frame's worth at the fastest speed). */
const STRETCH_CHUNK_FRAMES = 2;
/**
 * Dry ticks (queue empty mid-utterance) before the time-stretcher's held tail is played out anyway: an engine
 * streaming at real time may be a little late, and flushing at once would put a fade into the speech.
 */
const STRETCH_FLUSH_AFTER_DRY_TICKS = 3;
/** RFC 4733 telephone-event packet: header + 4-byte payload. */
const EVENT_PACKET_BYTES = RTP_HEADER_BYTES + 4;

export interface OutboundOptions {
  engineRate: ResamplerRate;
  wireFormat: 'mulaw_8000' | 'alaw_8000';
  payloadType: number;
  telephoneEventPayloadType?: number;
  /** audio_speed, 0.5..2.0 (1: untouched). */
  speed?: number;
  noise?: { bed: NoiseBed; level: number } | null;
  queueMs?: number;
  /** Sends one packet (buf[0, length)); called synchronously on the tick. */
  send(packet: Uint8Array, length: number): void;
  /** What the far end hears, at the engine rate (recording). */
  onPlayedFrame?(frame: Int16Array): void;
  rtp?: { ssrc?: number; initialSequence?: number; initialTimestamp?: number };
}

type TickKind = 'audio' | 'dtmf';

export class OutboundStream implements PacedStream {
  readonly engineFrame: number;
  readonly codec: G711Codec;
  readonly rtp: RtpSender;
  /** The engine-rate frame prepared for this tick (input of the batched resample + encode). */
  readonly frame: Int16Array;
  /** The packet buffer; payload view encodes in place after the header. */
  readonly packet: Uint8Array;
  readonly payload: Uint8Array;
  readonly resampler: Resampler | undefined;
  /**
   * One array holding frame, stretchIn, stretchOut and both FIFOs' rings, so that moving samples between them
   * is a memmove (SampleFifo arena), not a loop per sample.
   */
  private readonly arena: Int16Array;
  private readonly stretchInAt: number;
  private readonly stretchOutAt: number;
  private readonly queue: SampleFifo;
  private readonly stretch: TimeStretch;
  private readonly stretchIn: Int16Array;
  private readonly stretchOut: Int16Array;
  private readonly stretched: SampleFifo;
  private readonly noise: NoiseMix | undefined;
  private readonly dtmf: TelephoneEventSender | undefined;
  private readonly eventPacket = new Uint8Array(EVENT_PACKET_BYTES);
  private speed: number;
  private kind: TickKind = 'audio';
  private first = true;
  private endOfAudio = false;
  private dryTicks = 0;
  private ownScratch: Int16Array | undefined;
  private ownScratchFrame: Int16Array | undefined;
  /** Engine samples taken from the queue and played (barge-in truncates the assistant item to this). */
  playedSamples = 0;
  /** Ticks where the queue ran dry mid-stream (silence sent instead). */
  underruns = 0;
  packetsSent = 0;

  constructor(private readonly opts: OutboundOptions) {
    const wire = formatInfo(opts.wireFormat);
    this.codec = opts.wireFormat === 'mulaw_8000' ? G711_MULAW : G711_ALAW;
    this.engineFrame = (opts.engineRate * FRAME_MS) / 1000;
    this.packet = new Uint8Array(RTP_HEADER_BYTES + wire.bytesPerFrame);
    this.payload = this.packet.subarray(RTP_HEADER_BYTES);
    this.resampler =
      opts.engineRate === wire.sampleRate
        ? undefined
        : new Resampler(opts.engineRate, wire.sampleRate as ResamplerRate, this.engineFrame);
    this.rtp = new RtpSender({ payloadType: opts.payloadType, ...opts.rtp });
    const queueSamples = Math.ceil((opts.engineRate * (opts.queueMs ?? OUTBOUND_DEFAULT_QUEUE_MS)) / 1000);
    const chunk = this.engineFrame * STRETCH_CHUNK_FRAMES;
    this.stretch = new TimeStretch({ sampleRate: opts.engineRate, maxInput: chunk, speed: opts.speed ?? 1 });
    const stretchOutSamples = this.stretch.maxOutput(chunk) * 2 + 4 * this.engineFrame;
    // Arena layout: frame | stretchIn | stretchOut | queue ring | stretched ring.
    this.stretchInAt = this.engineFrame;
    this.stretchOutAt = this.stretchInAt + chunk;
    const queueAt = this.stretchOutAt + stretchOutSamples;
    const stretchedAt = queueAt + queueSamples;
    this.arena = new Int16Array(stretchedAt + stretchOutSamples * 2);
    this.frame = this.arena.subarray(0, this.engineFrame);
    this.stretchIn = this.arena.subarray(this.stretchInAt, this.stretchInAt + chunk);
    this.stretchOut = this.arena.subarray(this.stretchOutAt, this.stretchOutAt + stretchOutSamples);
    this.queue = new SampleFifo(queueSamples, { array: this.arena, offset: queueAt });
    this.stretched = new SampleFifo(stretchOutSamples * 2, { array: this.arena, offset: stretchedAt });
    this.speed = opts.speed ?? 1;
    this.noise =
      opts.noise && opts.noise.level > 0
        ? new NoiseMix({ bed: opts.noise.bed, sampleRate: opts.engineRate, level: opts.noise.level })
        : undefined;
    if (opts.telephoneEventPayloadType !== undefined) {
      this.dtmf = new TelephoneEventSender(this.rtp, {
        payloadType: opts.telephoneEventPayloadType,
        clockRate: wire.rtpClockRate,
        ticksPerPacket: (wire.rtpClockRate * FRAME_MS) / 1000,
      });
    }
  }

  /** Queues engine audio (engine rate); returns the samples accepted (fewer when the queue is full). */
  enqueue(pcm: Int16Array): number {
    const n = Math.min(pcm.length, this.queue.free);
    this.queue.write(pcm, n);
    return n;
  }

  get queuedMs(): number {
    return ((this.queue.length + this.stretched.length) * 1000) / this.opts.engineRate;
  }

  /** The engine finished an utterance: what the stretcher holds back is played out as soon as the queue is dry. */
  markEndOfAudio(): void {
    this.endOfAudio = true;
  }

  /** Barge-in: drops everything queued and held in the stretcher; returns the samples dropped. */
  clear(): number {
    this.endOfAudio = false;
    this.dryTicks = 0;
    const dropped = this.queue.length;
    this.queue.clear();
    this.stretched.clear();
    this.stretch.reset();
    return dropped;
  }

  setSpeed(speed: number): void {
    this.stretch.setSpeed(speed);
    this.speed = speed;
  }

  /** Sends RFC 4733 digits (audio pauses while they play). */
  sendDtmf(digits: string, durationMs?: number): void {
    if (!this.dtmf) throw new Error('telephone-event was not negotiated for this stream');
    this.dtmf.send(digits, durationMs);
  }

  /** Unbatched use: the whole chain for this stream on its own tick. */
  tick(): void {
    this.prepare();
    this.encodeSelf();
    this.finish();
  }

  /** Stage 1 (per stream): fills `frame` with this tick's engine-rate audio. */
  prepare(): void {
    if (this.dtmf?.active) {
      this.kind = 'dtmf';
      this.frame.fill(0);
      return;
    }
    this.kind = 'audio';
    const n = this.engineFrame;
    let got: number;
    // Into the frame at the start of the arena: a memmove.
    if (this.speed === 1 && this.stretched.length === 0) {
      got = this.queue.read(this.arena, n, 0);
      this.playedSamples += got;
    } else {
      this.fillStretched(n);
      got = this.stretched.read(this.arena, n, 0);
    }
    if (got < n) {
      if (got > 0) this.underruns++;
      this.frame.fill(0, got);
    }
    this.noise?.process(this.frame, this.frame);
    this.opts.onPlayedFrame?.(this.frame);
  }

  /** Stage 3 (per stream): writes the RTP header (or a telephone-event packet) and sends. */
  finish(): void {
    if (this.kind === 'dtmf' && this.dtmf) {
      const len = this.dtmf.writeTick(this.eventPacket);
      if (len > 0) {
        this.opts.send(this.eventPacket, len);
        this.packetsSent++;
      }
    } else {
      this.rtp.writeNext(this.packet, this.first);
      this.first = false;
      this.opts.send(this.packet, this.packet.length);
      this.packetsSent++;
    }
    // RFC 3550 5.1: the timestamp follows the sampling clock, one frame per tick whatever was sent.
    this.rtp.advanceTimestamp(this.payload.length);
  }

  destroy(): void {
    this.resampler?.destroy();
  }

  private encodeSelf(): void {
    if (!this.resampler) {
      encodeOne(this.codec, this.frame, this.payload);
      return;
    }
    if (!this.ownScratch) {
      const scratch = new Int16Array(Math.max(this.payload.length, this.resampler.maxOutput(this.engineFrame)));
      this.ownScratch = scratch;
      this.ownScratchFrame = scratch.subarray(0, this.payload.length);
    }
    const n = this.resampler.process(this.frame, this.ownScratch);
    // 20 ms at every supported engine rate is a whole number of 8 kHz samples; guard the packet size anyway.
    if (n < this.payload.length) this.ownScratch.fill(0, n, this.payload.length);
    encodeOne(this.codec, this.ownScratchFrame!, this.payload);
  }

  /** Runs the stretcher until a frame is ready; when the queue is dry, plays out its tail at the end of audio. */
  private fillStretched(n: number): void {
    while (this.stretched.length < n) {
      const k = this.queue.read(this.arena, this.stretchIn.length, this.stretchInAt);
      if (k === 0) {
        if (this.endOfAudio || ++this.dryTicks >= STRETCH_FLUSH_AFTER_DRY_TICKS) {
          const m = this.stretch.flush(this.stretchOut);
          if (m > 0) this.stretched.write(this.arena, m, this.stretchOutAt);
          this.endOfAudio = false;
          this.dryTicks = 0;
        }
        return;
      }
      this.dryTicks = 0;
      this.playedSamples += k;
      const m = this.stretch.process(this.stretchIn, this.stretchOut, k);
      this.stretched.write(this.arena, m, this.stretchOutAt);
    }
  }
}

function encodeOne(codec: G711Codec, pcm: Int16Array, out: Uint8Array): void {
  singleFrame[0] = pcm;
  singleOut[0] = out;
  encodeBatch(codec, singleFrame, singleOut);
}
const singleFrame: Int16Array[] = [];
const singleOut: Uint8Array[] = [];

interface Group {
  codec: G711Codec;
  streams: OutboundStream[];
  resamplers: Resampler[];
  inputs: Int16Array[];
  outs: Uint8Array[];
  /** Streams whose engine rate differs from the wire rate: registered natively once per rebuild. */
  native: ResampleEncodeGroup | undefined;
}

/**
 * Every outbound stream of a worker on one pacing-clock participant: per tick, prepare each stream, then one
 * native call per (codec, resampled or not) group, then finish each stream. Groups are rebuilt only when
 * streams join or leave.
 */
export class OutboundBatch implements PacedStream {
  private readonly streams = new Set<OutboundStream>();
  private groups: Group[] = [];
  private dirty = false;

  add(stream: OutboundStream): void {
    this.streams.add(stream);
    this.dirty = true;
  }

  remove(stream: OutboundStream): void {
    this.streams.delete(stream);
    this.dirty = true;
  }

  get size(): number {
    return this.streams.size;
  }

  tick(): void {
    if (this.dirty) this.rebuild();
    const groups = this.groups;
    for (let g = 0; g < groups.length; g++) {
      const s = groups[g].streams;
      for (let i = 0; i < s.length; i++) s[i].prepare();
    }
    for (let g = 0; g < groups.length; g++) {
      const grp = groups[g];
      if (grp.native) grp.native.run();
      else encodeBatch(grp.codec, grp.inputs, grp.outs);
    }
    for (let g = 0; g < groups.length; g++) {
      const s = groups[g].streams;
      for (let i = 0; i < s.length; i++) s[i].finish();
    }
  }

  /** Releases the native groups (the streams stay usable). */
  destroy(): void {
    for (const g of this.groups) g.native?.destroy();
    this.groups = [];
    this.dirty = this.streams.size > 0;
  }

  private rebuild(): void {
    for (const g of this.groups) g.native?.destroy();
    const byKey = new Map<string, Group>();
    for (const s of this.streams) {
      const key = `${s.codec}/${s.resampler ? 1 : 0}`;
      let g = byKey.get(key);
      if (!g) {
        g = { codec: s.codec, streams: [], resamplers: [], inputs: [], outs: [], native: undefined };
        byKey.set(key, g);
      }
      g.streams.push(s);
      if (s.resampler) g.resamplers.push(s.resampler);
      g.inputs.push(s.frame);
      g.outs.push(s.payload);
    }
    for (const g of byKey.values()) {
      if (g.resamplers.length > 0) g.native = new ResampleEncodeGroup(g.codec, g.resamplers, g.inputs, g.outs);
    }
    this.groups = [...byKey.values()];
    this.dirty = false;
  }
}
