// Batched file writes on libuv's thread pool (native/src/bind_block_writer.cc, block_writer.h).
import { nativeAddon } from './addon.js';

interface BlockWriterFunctions {
  writeBlocks(
    fds: Int32Array,
    blocks: Int16Array[],
    pairs: Int32Array,
    offsets: Float64Array,
    groups: Int32Array,
    done: (results: Float64Array) => void,
  ): void;
}

const addon = nativeAddon() as BlockWriterFunctions;

/** Error values of writeBlocks besides errno: a write returned 0 bytes; a write skipped after its group's failure. */
export const BLOCK_NOTHING_WRITTEN = -1;
export const BLOCK_SKIPPED = -2;

/**
 * Writes the first pairs[i] sample pairs of the planar stereo blocks[i] (left channel in its first half, right in
 * its second), interleaved as 16-bit little-endian stereo, to fds[i] at offsets[i], in order, in one job on libuv's
 * thread pool (pwrite, short writes continued, EINTR retried); after a write of a group fails, that group's later
 * writes are skipped. `done` gets, per write, the bytes written (results[2i]) and 0 or its error (results[2i + 1]:
 * an errno, BLOCK_NOTHING_WRITTEN or BLOCK_SKIPPED). The descriptors must stay open until then; the blocks are kept
 * alive meanwhile.
 */
export function writeBlocks(
  fds: Int32Array,
  blocks: Int16Array[],
  pairs: Int32Array,
  offsets: Float64Array,
  groups: Int32Array,
  done: (results: Float64Array) => void,
): void {
  addon.writeBlocks(fds, blocks, pairs, offsets, groups, done);
}
