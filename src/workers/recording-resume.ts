// At start, main resumes the background gzips a previous run of this node left undone
// (src/media/recording-compressor.ts): a shutdown abandoned them, or the process died. Their rows still point at
// the playable `.wav` with `compress_to` set (src/store/conversations.ts pendingCompressions). A `.gz` beside such a
// `.wav` is what a killed compression left (the row moves before the `.wav` is removed, so a finished one never
// looks like this): it is removed and the WAV compressed again.
//
// Only the rows of conversations this node ran (`conversations.node_id` is its PARLEY_NODE_ID, null for the unnamed
// node) are resumed. Nodes may share one data directory (a shared volume), and a `.gz` beside another node's `.wav`
// may be one that node is writing right now: removing it, or compressing the same WAV at once, can leave the row on
// a truncated gzip with the WAV gone. Other nodes' rows are counted in one info line and never touched.
//
// Nor are the rows of a node whose heartbeat (`node_heartbeats`) is long dead taken over. A stale heartbeat shows
// that the node lost the database, not that it stopped writing to the shared volume: a compression's file steps
// need no database until the row moves, and a paused container or VM resumes mid-write. Only the node itself knows
// that nothing of its is running, so its rows wait for it to start again with its PARLEY_NODE_ID. Waiting costs
// disk space only: the `.wav` stays playable and is served as either container. A takeover would also overwrite
// node_id, the record of which node ran the conversation.
//
// Runs on main's own compressor (one at a time, the rows moved with the store directly: main owns the database).
import { existsSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Logger } from '../log.js';
import { RecordingError, recordingPath, RECORDINGS_DIR } from '../media/recording.js';
import { RecordingCompressor, type CompressFn } from '../media/recording-compressor.js';
import type { Sql } from '../store/db.js';
import {
  moveRecordingToCompressed,
  pendingCompressions,
  pendingCompressionsOfOtherNodes,
} from '../store/conversations.js';

export interface ResumeOptions {
  sql: Sql;
  dataDir: string;
  log: Logger;
  /** This node's PARLEY_NODE_ID, null for the unnamed node: the conversations whose recordings it resumes. */
  nodeId: string | null;
  /** compressRecording by default (tests hold it). */
  compress?: CompressFn;
}

/** Queues every pending compression of this node's conversations; close() the compressor at shutdown. */
export async function resumeCompressions(
  opts: ResumeOptions,
): Promise<{ compressor: RecordingCompressor; queued: number }> {
  const { sql, log } = opts;
  const compressor = new RecordingCompressor({
    log,
    compress: opts.compress,
    store: {
      recordingCompressed: async (id, side, from, to) => ({
        updated: await moveRecordingToCompressed(sql, id, side, from, to),
      }),
    },
  });
  const dir = join(opts.dataDir, RECORDINGS_DIR);
  // Both read before anything is queued, so a failing read leaves no compressor running that nobody closes.
  const own = await pendingCompressions(sql, opts.nodeId);
  const others = await pendingCompressionsOfOtherNodes(sql, opts.nodeId);
  let queued = 0;
  let notOnDisk = 0;
  for (const r of own) {
    let wav: string;
    try {
      wav = recordingPath(opts.dataDir, r.path);
    } catch (err) {
      if (!(err instanceof RecordingError)) throw err;
      log.error(
        { err, conversationId: r.conversation_id },
        'pending recording outside the recordings directory: not compressed',
      );
      continue;
    }
    // This node's row whose WAV is not in its data directory (the node's id moved to another disk): nothing to
    // compress here, and the row stays on its path.
    if (!existsSync(wav)) {
      notOnDisk++;
      continue;
    }
    const rel = relative(dir, wav);
    try {
      await unlink(`${wav}.gz`);
      log.info(
        { conversationId: r.conversation_id, path: `${rel}.gz` },
        'removed the partial gzip of an interrupted compression',
      );
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    compressor.enqueue({ conversationId: r.conversation_id, side: r.side, dir, wav: rel });
    queued++;
  }
  if (queued > 0 || notOnDisk > 0)
    log.info({ queued, notOnDisk }, 'resuming recording compressions left by the previous run');
  if (others.length > 0) {
    log.info(
      {
        recordings: others.reduce((n, o) => n + o.recordings, 0),
        nodes: others.map((o) => ({
          nodeId: o.node_id,
          recordings: o.recordings,
          heartbeatAt: o.heartbeat_at?.toISOString() ?? null,
        })),
      },
      'pending recording compressions of other nodes left to them, also of a node whose heartbeat is long dead: it resumes them when it starts again with its PARLEY_NODE_ID',
    );
  }
  return { compressor, queued };
}
