// At start, main resumes the background gzips a previous run left undone (src/media/recording-compressor.ts): a
// shutdown abandoned them, or the process died. Their rows still point at the playable `.wav` with `compress_to`
// set (src/store/conversations.ts pendingCompressions). A `.gz` beside such a `.wav` is what a killed compression
// left (the row moves before the `.wav` is removed, so a finished one never looks like this): it is removed and
// the WAV compressed again. Rows whose `.wav` is not in this node's data directory are another node's: left alone.
// Runs on main's own compressor (one at a time, the rows moved with the store directly: main owns the database).
import { existsSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Logger } from '../log.js';
import { RecordingError, recordingPath, RECORDINGS_DIR } from '../media/recording.js';
import { RecordingCompressor, type CompressFn } from '../media/recording-compressor.js';
import type { Sql } from '../store/db.js';
import { moveRecordingToCompressed, pendingCompressions } from '../store/conversations.js';

export interface ResumeOptions {
  sql: Sql;
  dataDir: string;
  log: Logger;
  /** compressRecording by default (tests hold it). */
  compress?: CompressFn;
}

/** Queues every pending compression found in this node's recordings; close() the compressor at shutdown. */
export async function resumeCompressions(opts: ResumeOptions): Promise<{ compressor: RecordingCompressor; queued: number }> {
  const { sql, log } = opts;
  const compressor = new RecordingCompressor({
    log,
    compress: opts.compress,
    store: { recordingCompressed: async (id, side, from, to) => ({ updated: await moveRecordingToCompressed(sql, id, side, from, to) }) },
  });
  const dir = join(opts.dataDir, RECORDINGS_DIR);
  let queued = 0;
  for (const r of await pendingCompressions(sql)) {
    let wav: string;
    try {
      wav = recordingPath(opts.dataDir, r.path);
    } catch (err) {
      if (!(err instanceof RecordingError)) throw err;
      log.error({ err, conversationId: r.conversation_id }, 'pending recording outside the recordings directory: not compressed');
      continue;
    }
    if (!existsSync(wav)) continue;
    const rel = relative(dir, wav);
    try {
      await unlink(`${wav}.gz`);
      log.info({ conversationId: r.conversation_id, path: `${rel}.gz` }, 'removed the partial gzip of an interrupted compression');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    compressor.enqueue({ conversationId: r.conversation_id, side: r.side, dir, wav: rel });
    queued++;
  }
  if (queued > 0) log.info({ queued }, 'resuming recording compressions left by the previous run');
  return { compressor, queued };
}
