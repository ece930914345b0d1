// The recordings of a thread (a media worker) hand their full blocks to the file through one batch at a time:
// every block queued by the end of an event-loop turn goes into one job on libuv's thread pool (native writeBlocks),
// and the next batch starts when it has called back. Why: a pool round trip (a thread woken, the worker's core
// switched to it and back, a completion through the event loop) per tick, not per block. One batch at a time keeps
// each file's blocks in order; within a batch a file's blocks are adjacent, and after one fails the rest of that
// file's are skipped. A block is planar stereo (left channel, then right, each half of it); the job interleaves it
// as it writes it.
import { writeBlocks } from './native/block-writer.js';

/** One block for a file: its first `pairs` of each half, interleaved, written at `offset`. */
export interface BlockWrite {
  readonly data: Int16Array;
  readonly pairs: number;
  readonly offset: number;
  /** Results: the bytes written, and 0 or the error (an errno, BLOCK_NOTHING_WRITTEN or BLOCK_SKIPPED). */
  written: number;
  error: number;
}

export interface BlockSource {
  readonly fd: number;
  /** Its writes of a batch are done (in the order queued; after a failed one, the rest are BLOCK_SKIPPED). */
  written(writes: BlockWrite[]): void;
}

export class RecordingWriter {
  /** The next batch, by file: insertion order, so a file's blocks stay in order and together. */
  private queued = new Map<BlockSource, BlockWrite[]>();
  private inFlight: Map<BlockSource, BlockWrite[]> | null = null;
  private scheduled = false;

  /** Queues a block of `source`'s file for the next batch: planar `data`, of which `pairs` sample pairs are written. */
  write(source: BlockSource, data: Int16Array, pairs: number, offset: number): void {
    const w: BlockWrite = { data, pairs, offset, written: 0, error: 0 };
    const list = this.queued.get(source);
    if (list) list.push(w);
    else this.queued.set(source, [w]);
    if (!this.scheduled && this.inFlight === null) {
      this.scheduled = true;
      setImmediate(this.start);
    }
  }

  /** Takes back `source`'s writes not yet in a batch (its recording stops); a batch under way is not stopped. */
  unqueue(source: BlockSource): BlockWrite[] {
    const list = this.queued.get(source) ?? [];
    this.queued.delete(source);
    return list;
  }

  private readonly start = (): void => {
    this.scheduled = false;
    if (this.inFlight !== null || this.queued.size === 0) return;
    const batch = this.queued;
    this.queued = new Map();
    this.inFlight = batch;
    let count = 0;
    for (const list of batch.values()) count += list.length;
    const fds = new Int32Array(count);
    const blocks: Int16Array[] = new Array<Int16Array>(count);
    const pairs = new Int32Array(count);
    const offsets = new Float64Array(count);
    const groups = new Int32Array(count);
    let i = 0;
    let group = 0;
    for (const [source, list] of batch) {
      for (const w of list) {
        fds[i] = source.fd;
        blocks[i] = w.data;
        pairs[i] = w.pairs;
        offsets[i] = w.offset;
        groups[i++] = group;
      }
      group++;
    }
    writeBlocks(fds, blocks, pairs, offsets, groups, this.done);
  };

  private readonly done = (results: Float64Array): void => {
    const batch = this.inFlight!;
    this.inFlight = null;
    let i = 0;
    for (const list of batch.values()) {
      for (const w of list) {
        w.written = results[2 * i];
        w.error = results[2 * i + 1];
        i++;
      }
    }
    // Results first: a recording whose write failed takes back its queued blocks before the next batch could.
    for (const [source, list] of batch) source.written(list);
    if (this.queued.size > 0) this.start();
  };
}

/** The writer of this thread's recordings. */
export const recordingWriter = new RecordingWriter();
