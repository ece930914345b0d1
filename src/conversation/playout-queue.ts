// The samples a playout has queued and not yet played, in order, each run of them tagged with its owner (the
// utterance it belongs to). The samples live in one-second blocks of the worker's audio block pool
// (src/media/audio-block-pool.ts), written and read with cursors: queuing copies the engine's lent audio into the
// last block, playing copies out of the first, and a block goes back to the pool once read to its end. A copy is a
// set() of a short-lived view (subarray), a memcpy rather than a loop per sample; nothing else is allocated per
// chunk or per frame, and a new segment object only when the owner changes. Pooled blocks, because audio queued
// for seconds would otherwise be promoted and left to the major GC.
//
// Dropping an owner's audio (barge-in) marks its segments dropped; their samples are skipped when reading reaches
// them, so a segment in the middle of the queue can go without moving what follows it.
import type { AudioBlockPool } from '../media/audio-block-pool.js';

interface Segment<U> {
  readonly owner: U;
  /** Samples of this segment not yet read (or skipped). */
  remaining: number;
  dropped: boolean;
}

export class PlayoutQueue<U> {
  /** Blocks holding the queued samples, oldest first: reading starts in blocks[0] at readAt. */
  private readonly blocks: Int16Array[] = [];
  private readAt = 0;
  /** Samples written into the last block. */
  private writeAt = 0;
  private readonly segments: Segment<U>[] = [];
  /** Queued samples not dropped. */
  private live = 0;
  private readonly blockSamples: number;

  constructor(private readonly pool: AudioBlockPool) {
    this.blockSamples = pool.blockSamples;
  }

  /** No audio left to play (dropped audio not yet skipped does not count). */
  get isEmpty(): boolean {
    return this.live === 0;
  }

  /** Queued samples of every owner, not dropped. */
  get samples(): number {
    return this.live;
  }

  /** Appends src[from, to) of `owner` (copied: src is lent). */
  push(owner: U, src: Int16Array, from = 0, to = src.length): void {
    const n = to - from;
    if (n <= 0) return;
    const last = this.segments.length > 0 ? this.segments[this.segments.length - 1] : null;
    if (last !== null && last.owner === owner && !last.dropped) last.remaining += n;
    else this.segments.push({ owner, remaining: n, dropped: false });
    this.live += n;
    const size = this.blockSamples;
    let at = from;
    while (at < to) {
      if (this.blocks.length === 0 || this.writeAt === size) {
        this.blocks.push(this.pool.take());
        this.writeAt = 0;
      }
      const block = this.blocks[this.blocks.length - 1];
      const m = Math.min(to - at, size - this.writeAt);
      block.set(m === src.length ? src : src.subarray(at, at + m), this.writeAt);
      this.writeAt += m;
      at += m;
    }
  }

  /** The owner of the next audio to play, or null when nothing is queued. */
  headOwner(): U | null {
    this.skipDropped();
    return this.segments.length > 0 ? this.segments[0].owner : null;
  }

  /**
   * Copies up to `max` samples of `owner` from the head of the queue into dst from `at`; stops at audio of another
   * owner. Returns the samples copied.
   */
  read(owner: U, dst: Int16Array, at: number, max: number): number {
    let copied = 0;
    while (copied < max) {
      this.skipDropped();
      const seg = this.segments.length > 0 ? this.segments[0] : null;
      if (seg === null || seg.owner !== owner) break;
      const block = this.blocks[0];
      const inBlock = (this.blocks.length === 1 ? this.writeAt : this.blockSamples) - this.readAt;
      const m = Math.min(max - copied, seg.remaining, inBlock);
      dst.set(block.subarray(this.readAt, this.readAt + m), at + copied);
      copied += m;
      this.live -= m;
      this.consume(seg, m);
    }
    // Dropped audio left behind the last live sample is skipped now, not when the head is next asked for: an idle
    // playout does not ask (Playout.tick), and its blocks go back to the pool.
    if (this.live === 0) this.skipDropped();
    return copied;
  }

  /** Drops every queued sample of `owner`; returns how many. */
  drop(owner: U): number {
    let dropped = 0;
    for (const seg of this.segments) {
      if (seg.owner !== owner || seg.dropped) continue;
      seg.dropped = true;
      dropped += seg.remaining;
    }
    this.live -= dropped;
    this.skipDropped();
    return dropped;
  }

  /** Whether any audio of `owner` is queued. A loop, not some(): no closure per call (asked every tick). */
  has(owner: U): boolean {
    const segments = this.segments;
    for (let i = 0; i < segments.length; i++) if (segments[i].owner === owner && !segments[i].dropped) return true;
    return false;
  }

  /** Gives every block back to the pool; the queue is empty afterwards and may be used again. */
  clear(): void {
    for (let i = 0; i < this.blocks.length; i++) this.pool.give(this.blocks[i]);
    this.blocks.length = 0;
    this.segments.length = 0;
    this.readAt = 0;
    this.writeAt = 0;
    this.live = 0;
  }

  /** Skips the dropped segments at the head of the queue. */
  private skipDropped(): void {
    while (this.segments.length > 0 && this.segments[0].dropped) {
      const seg = this.segments[0];
      while (seg.remaining > 0) {
        const inBlock = (this.blocks.length === 1 ? this.writeAt : this.blockSamples) - this.readAt;
        this.consume(seg, Math.min(seg.remaining, inBlock));
      }
    }
  }

  /** `m` samples of the head segment, all within blocks[0], are read: advance, give back a finished block. */
  private consume(seg: Segment<U>, m: number): void {
    seg.remaining -= m;
    this.readAt += m;
    if (seg.remaining === 0) this.segments.shift();
    const end = this.blocks.length === 1 ? this.writeAt : this.blockSamples;
    if (this.readAt < end) return;
    // blocks[0] is read to its end (or, the last block, to what was written): back to the pool.
    this.pool.give(this.blocks.shift()!);
    this.readAt = 0;
    if (this.blocks.length === 0) this.writeAt = 0;
  }
}
