// One pool of audio blocks per media worker and block length (one second at a rate): the echo engine keeps the
// user turns it will play back in its blocks, and every playout (src/conversation/playout.ts) queues the
// assistant audio waiting for the pacing clock in them; both give them back once played, cleared or closed.
// Why one shared pool: audio held for seconds would otherwise be thousands of small buffers per worker, each
// promoted to the old generation and left to the major GC.
//
// Blocks are views carved from slabs of SLAB_BYTES (one ArrayBuffer each, every view created when the slab is),
// so V8 sees a few large buffers, and take/give allocate nothing: allocation stops once the pool has reached the
// worker's concurrent need (turns being spoken plus turns playing back, over all sessions).
//
// Retention policy. Blocks are taken from the oldest slab that has a free one, so demand packs into the oldest
// slabs and the newest drain first when demand falls. A slab all of whose blocks are free is kept for
// SLAB_IDLE_RELEASE_MS, then given back (to V8, and through it to the allocator); taking a block from it before
// that keeps it. So the pool holds: every slab with a block in use, plus the slabs that have been wholly free for
// less than a minute. The bound: a minute after a burst's turns have played out, the pool is back to its live
// blocks rounded up to whole slabs, the free blocks inside partly used slabs (which the oldest-first order fills
// before any new slab is carved) and nothing more; an idle worker holds nothing a minute after its last turn
// played. A load that recurs within the minute (echo turns come and go within ECHO_MAX_TURN_SEC) keeps its slabs and
// carves none again. A slab is released by dropping it; a block of it still referenced elsewhere would keep the
// whole slab alive, which is why a block is only ever given back once (give throws otherwise).
import { performance } from 'node:perf_hooks';

/**
 * Bytes per slab: 2 MiB, so a slab holds 131 one-second blocks at 8 kHz (16,000 bytes each) and 65 at 16 kHz.
 * Smaller slabs release memory in finer steps, larger ones mean fewer buffers; between 1 and 4 MiB neither matters.
 */
export const SLAB_BYTES = 2 * 1024 * 1024;
/**
 * A wholly free slab is released after a minute: as long as ECHO_MAX_TURN_SEC, so a steady load whose turns end
 * and start again within it never gives back a slab it will carve again (each carve is new external memory for V8).
 */
export const SLAB_IDLE_RELEASE_MS = 60_000;

export interface BlockPoolClock {
  now(): number;
  /** Runs `run` once after `ms` (must not keep the process alive). */
  schedule(run: () => void, ms: number): void;
}

const realClock: BlockPoolClock = {
  now: () => performance.now(),
  schedule: (run, ms) => {
    setTimeout(run, ms).unref();
  },
};

export interface BlockPoolStats {
  blockSamples: number;
  blocksPerSlab: number;
  slabs: number;
  blocksInUse: number;
  blocksFree: number;
  /** Bytes held in slabs (in use or free). */
  bytes: number;
  /** Slabs carved and released since the pool was made. */
  slabsCarved: number;
  slabsReleased: number;
}

interface Slab {
  readonly buffer: ArrayBuffer;
  /** Every block of the slab, by index (created with the slab: take allocates nothing). */
  readonly blocks: Int16Array[];
  /** Indices of the free blocks: a stack, `freeCount` deep. */
  readonly freeStack: Int32Array;
  freeCount: number;
  /** 1 where the block is free: a block given back twice is caught. */
  readonly isFree: Uint8Array;
  /** Position in the pool's slab list (oldest first). */
  index: number;
  /** When the slab became wholly free, or -1 while any block of it is in use. */
  freeSince: number;
}

export class AudioBlockPool {
  readonly blocksPerSlab: number;
  private readonly blockBytes: number;
  /** Oldest first. */
  private slabs: Slab[] = [];
  private readonly slabOf = new Map<ArrayBufferLike, Slab>();
  /** No slab before this index has a free block. */
  private firstWithFree = 0;
  private inUse = 0;
  private carved = 0;
  private released = 0;
  private sweepArmed = false;
  private readonly onSweep = (): void => this.sweep();

  constructor(
    readonly blockSamples: number,
    private readonly clock: BlockPoolClock = realClock,
    slabBytes = SLAB_BYTES,
    private readonly idleReleaseMs = SLAB_IDLE_RELEASE_MS,
  ) {
    if (!Number.isInteger(blockSamples) || blockSamples <= 0)
      throw new RangeError(`block length must be a positive integer, not ${blockSamples}`);
    this.blockBytes = blockSamples * Int16Array.BYTES_PER_ELEMENT;
    this.blocksPerSlab = Math.max(1, Math.floor(slabBytes / this.blockBytes));
  }

  /** A block of `blockSamples` samples, the caller's until it gives it back (its content is whatever it last held). */
  take(): Int16Array {
    let i = this.firstWithFree;
    while (i < this.slabs.length && this.slabs[i].freeCount === 0) i++;
    const slab = i < this.slabs.length ? this.slabs[i] : this.carve();
    this.firstWithFree = slab.index;
    const b = slab.freeStack[--slab.freeCount];
    slab.isFree[b] = 0;
    slab.freeSince = -1;
    this.inUse++;
    return slab.blocks[b];
  }

  /** Gives back a block taken from this pool; the caller must not touch it any more. Throws if it is not out. */
  give(block: Int16Array): void {
    const slab = this.slabOf.get(block.buffer);
    const b = slab === undefined ? -1 : block.byteOffset / this.blockBytes;
    if (slab === undefined || slab.blocks[b] !== block) throw new Error('audio block pool: not a block of this pool');
    if (slab.isFree[b] === 1) throw new Error('audio block pool: block given back twice');
    slab.isFree[b] = 1;
    slab.freeStack[slab.freeCount++] = b;
    this.inUse--;
    if (slab.index < this.firstWithFree) this.firstWithFree = slab.index;
    if (slab.freeCount === this.blocksPerSlab) {
      slab.freeSince = this.clock.now();
      this.armSweep(this.idleReleaseMs);
    }
  }

  stats(): BlockPoolStats {
    const slabs = this.slabs.length;
    return {
      blockSamples: this.blockSamples,
      blocksPerSlab: this.blocksPerSlab,
      slabs,
      blocksInUse: this.inUse,
      blocksFree: slabs * this.blocksPerSlab - this.inUse,
      bytes: slabs * this.blocksPerSlab * this.blockBytes,
      slabsCarved: this.carved,
      slabsReleased: this.released,
    };
  }

  private carve(): Slab {
    const n = this.blocksPerSlab;
    const buffer = new ArrayBuffer(n * this.blockBytes);
    const blocks: Int16Array[] = [];
    for (let b = 0; b < n; b++) blocks.push(new Int16Array(buffer, b * this.blockBytes, this.blockSamples));
    // Block 0 on top of the stack: a fresh slab is used from its start.
    const freeStack = new Int32Array(n);
    for (let b = 0; b < n; b++) freeStack[b] = n - 1 - b;
    const slab: Slab = {
      buffer,
      blocks,
      freeStack,
      freeCount: n,
      isFree: new Uint8Array(n).fill(1),
      index: this.slabs.length,
      freeSince: -1,
    };
    this.slabs.push(slab);
    this.slabOf.set(buffer, slab);
    this.carved++;
    return slab;
  }

  private armSweep(ms: number): void {
    if (this.sweepArmed) return;
    this.sweepArmed = true;
    this.clock.schedule(this.onSweep, ms);
  }

  /** Releases the slabs wholly free for idleReleaseMs; comes back for the others. */
  private sweep(): void {
    this.sweepArmed = false;
    const now = this.clock.now();
    let nextDue = Infinity;
    const kept: Slab[] = [];
    for (const slab of this.slabs) {
      if (slab.freeSince >= 0 && now - slab.freeSince >= this.idleReleaseMs) {
        this.slabOf.delete(slab.buffer);
        this.released++;
        continue;
      }
      if (slab.freeSince >= 0) nextDue = Math.min(nextDue, slab.freeSince + this.idleReleaseMs - now);
      slab.index = kept.length;
      kept.push(slab);
    }
    if (kept.length !== this.slabs.length) {
      this.slabs = kept;
      this.firstWithFree = 0;
    }
    if (nextDue !== Infinity) this.armSweep(Math.max(1, nextDue));
  }
}

/** The worker's pools, by block length. */
const pools = new Map<number, AudioBlockPool>();

/** The worker-wide pool of blocks of `blockSamples` samples. */
export function audioBlockPool(blockSamples: number): AudioBlockPool {
  let pool = pools.get(blockSamples);
  if (pool === undefined) {
    pool = new AudioBlockPool(blockSamples);
    pools.set(blockSamples, pool);
  }
  return pool;
}
