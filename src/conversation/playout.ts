// Assistant audio out, on the worker's pacing clock (docs/ARCHITECTURE.md, "Media pipeline"): engine audio ->
// time-stretch (audio_speed) -> background noise -> resample to the output rate -> encode -> client. One frame per
// tick; a frame the client could not take (backpressure) is kept and offered again on the next tick. Audio reaching
// an idle playout sends its first frame at once instead of on the next tick (which would add up to a frame of
// latency to the start of every reply); the clock paces the rest, so the stream runs at most one frame ahead. Engine
// audio (lent) is copied once, after the time-stretch, into the playout's queue of pooled one-second blocks
// (playout-queue.ts): neither queuing nor a tick allocates.
import { audioBlockPool } from '../media/audio-block-pool.js';
import { createEncoder, type Encoder } from '../media/codec.js';
import { formatInfo, FRAME_MS, type AudioFormat } from '../media/format.js';
import { Resampler, type ResamplerRate } from '../media/native/resampler.js';
import { NoiseMix, type NoiseBed } from '../media/noise.js';
import type { PacedStream } from '../media/pacing-clock.js';
import { TimeStretch } from '../media/time-stretch.js';
import { prefixView } from '../media/prefix-views.js';
import { PlayoutQueue } from './playout-queue.js';

/** Engine audio fed to the time-stretcher at a time. */
const STRETCH_CHUNK_MS = 40;

export interface PlayoutOwner {
  readonly state: string;
}

export interface PlayoutSink<U extends PlayoutOwner> {
  /** A frame of `owner` is due: `pcm` is what is heard (engine rate), `encoded` what goes out; false = not sent. */
  frame(owner: U, pcm: Int16Array, encoded: Uint8Array, playedEnd: number): boolean;
  /** `owner`'s last queued sample has played and nothing more was queued for it. */
  drained(owner: U): void;
}

export interface PlayoutOptions<U extends PlayoutOwner> {
  engineRate: ResamplerRate;
  outputFormat: AudioFormat;
  speed: number;
  noise: { bed: NoiseBed; level: number } | null;
  sink: PlayoutSink<U>;
}

export class Playout<U extends PlayoutOwner> implements PacedStream {
  readonly frameSamples: number;
  private readonly queued: PlayoutQueue<U>;
  private readonly frame: Int16Array;
  private readonly stretch: TimeStretch | null;
  /** What the stretcher made of one 40 ms piece (or its flush), before it is queued. */
  private readonly stretchOut: Int16Array;
  private readonly chunkSamples: number;
  private readonly noise: NoiseMix | null;
  private readonly resampler: Resampler | null;
  private readonly resampled: Int16Array;
  private readonly encoder: Encoder;
  private readonly encoded: Uint8Array;
  /**
   * opts.sink, read per tick from here: opts is built by spreading (AssistantSpeech.attach), which gives each
   * playout's options a hidden class of their own, so reading the sink off opts would be a megamorphic load.
   */
  private readonly sink: PlayoutSink<U>;
  private held: { owner: U; bytes: number; pcm: Int16Array; playedEnd: number } | null = null;
  /**
   * queued.samples, copied here after every change of the queue: an idle tick (most of them: nobody is speaking)
   * then reads nothing but this object, not the queue and its segment list.
   */
  private liveSamples = 0;
  private readonly heldPcm: Int16Array;
  /** Samples played per owner (the sink's view of progress). */
  private readonly played = new Map<U, number>();
  framesSent = 0;
  framesHeld = 0;
  /** Views of the first n encoded bytes, made once per distinct n (a stream has one or two frame sizes). */
  private readonly encodedViews = new Map<number, Uint8Array>();
  private readonly resampledViews = new Map<number, Int16Array>();

  constructor(private readonly opts: PlayoutOptions<U>) {
    const rate = opts.engineRate;
    this.frameSamples = (rate * FRAME_MS) / 1000;
    this.frame = new Int16Array(this.frameSamples);
    this.heldPcm = new Int16Array(this.frameSamples);
    this.chunkSamples = (rate * STRETCH_CHUNK_MS) / 1000;
    this.stretch =
      opts.speed === 1 ? null : new TimeStretch({ sampleRate: rate, maxInput: this.chunkSamples, speed: opts.speed });
    // Room for one piece's output or for a flush (which may exceed a piece's).
    this.stretchOut = new Int16Array(this.stretch ? this.stretch.maxOutput(this.chunkSamples) * 2 : 0);
    this.queued = new PlayoutQueue<U>(audioBlockPool(rate));
    this.noise =
      opts.noise && opts.noise.level > 0
        ? new NoiseMix({ bed: opts.noise.bed, sampleRate: rate, level: opts.noise.level })
        : null;
    const out = formatInfo(opts.outputFormat);
    this.resampler =
      out.sampleRate === rate ? null : new Resampler(rate, out.sampleRate as ResamplerRate, this.frameSamples);
    this.resampled = this.resampler ? new Int16Array(this.resampler.maxOutput(this.frameSamples)) : this.frame;
    this.encoder = createEncoder(opts.outputFormat);
    this.encoded = new Uint8Array(Math.max(4000, this.resampled.length * 2));
    this.sink = opts.sink;
  }

  /** Nothing queued or held: the next audio starts a stream of frames. */
  get idle(): boolean {
    return this.held === null && this.liveSamples === 0;
  }

  /** Queues engine audio of `owner`; returns the samples queued after time-stretch. An idle playout sends a frame at once. */
  enqueue(owner: U, pcm: Int16Array): number {
    const idle = this.idle;
    const queued = this.queue(owner, pcm);
    this.liveSamples = this.queued.samples;
    if (idle && this.liveSamples !== 0) this.tick();
    return queued;
  }

  private queue(owner: U, pcm: Int16Array): number {
    const stretch = this.stretch;
    if (!stretch) {
      this.queued.push(owner, pcm);
      return pcm.length;
    }
    let queued = 0;
    for (let i = 0; i < pcm.length; i += this.chunkSamples) {
      const m = stretch.process(pcm.subarray(i, Math.min(pcm.length, i + this.chunkSamples)), this.stretchOut);
      this.queued.push(owner, this.stretchOut, 0, m);
      queued += m;
    }
    return queued;
  }

  /** The owner's audio is complete: what the stretcher still holds is queued (and sent at once if idle). */
  finish(owner: U): number {
    if (!this.stretch) return 0;
    const idle = this.idle;
    const n = this.stretch.flush(this.stretchOut);
    this.stretch.reset();
    this.queued.push(owner, this.stretchOut, 0, n);
    this.liveSamples = this.queued.samples;
    if (idle && this.liveSamples !== 0) this.tick();
    return n;
  }

  /** Barge-in: drops everything queued (and a held frame) of `owner`; returns the samples dropped. */
  clear(owner: U): number {
    const dropped = this.queued.drop(owner);
    this.liveSamples = this.queued.samples;
    if (this.held?.owner === owner) this.held = null;
    this.stretch?.reset();
    this.played.delete(owner);
    return dropped;
  }

  hasAudio(owner: U): boolean {
    return this.held?.owner === owner || this.queued.has(owner);
  }

  /** Pacing clock: one frame is due. */
  tick(): void {
    if (this.held) {
      const h = this.held;
      if (!this.sink.frame(h.owner, h.pcm, this.encodedView(h.bytes), h.playedEnd)) {
        this.framesHeld++;
        return;
      }
      this.held = null;
      this.framesSent++;
      this.afterFrame(h.owner);
      return;
    }
    if (this.liveSamples === 0) return;
    const owner = this.queued.headOwner()!;
    const filled = this.queued.read(owner, this.frame, 0, this.frameSamples);
    this.liveSamples = this.queued.samples;
    if (filled < this.frameSamples) this.frame.fill(0, filled);
    this.noise?.process(this.frame, this.frame);
    let pcm = this.frame;
    if (this.resampler) {
      const m = this.resampler.process(this.frame, this.resampled);
      pcm = prefixView(this.resampledViews, this.resampled, m);
    }
    const bytes = this.encoder.encodeInto(pcm, this.encoded);
    const playedEnd = (this.played.get(owner) ?? 0) + filled;
    this.played.set(owner, playedEnd);
    if (!this.sink.frame(owner, this.frame, this.encodedView(bytes), playedEnd)) {
      this.heldPcm.set(this.frame);
      this.held = { owner, bytes, pcm: this.heldPcm, playedEnd };
      this.framesHeld++;
      return;
    }
    this.framesSent++;
    this.afterFrame(owner);
  }

  private encodedView(n: number): Uint8Array {
    return prefixView(this.encodedViews, this.encoded, n);
  }

  private afterFrame(owner: U): void {
    if (!this.hasAudio(owner)) {
      this.played.delete(owner);
      this.sink.drained(owner);
    }
  }

  destroy(): void {
    this.queued.clear();
    this.liveSamples = 0;
    this.held = null;
    this.resampler?.destroy();
  }
}
