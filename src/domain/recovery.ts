// Recovery of conversations a node left in progress when it died (kill -9, a crash, a lost machine): their records
// are ended (`ended_by: error`, ended where what was recorded of them ends), their leases freed, and their recording
// files, whose WAV header the killed writer never patched, repaired and attached to the record, or removed when the
// record may not keep them (docs/ARCHITECTURE.md, "Data").
//
// - At start-up (recoverAtStart, before the media workers run): the node's own leftovers, found by its
//   PARLEY_NODE_ID and by the leases under its lease name, are ended at once; its leases are freed; and every
//   `<conversation id>.wav` in its recordings directory that no row points at is attached to its ended record or
//   removed. Files of conversations another node ran are left to that node, as their compressions are
//   (src/workers/recording-resume.ts): nodes may share one data directory.
// - While running (recoverAbandoned, every lease TTL): conversations of any node whose lease is no longer renewed
//   (their node died; an unnamed node's leftovers, whose lease name died with its process, too) are ended by whichever
//   node comes first, exactly once (src/store/recovery.ts endAbandonedConversation); a node attaches only the files
//   of conversations it ran itself. A node cut off from the database for longer than the lease TTL looks dead too:
//   its conversations may be ended by another node meanwhile; they go on, their items still land, and their finish
//   fills in what recovery left empty (the transcript, the recording).
import { open, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log.js';
import { RECORDINGS_DIR, WAV_HEADER_BYTES } from '../media/recording.js';
import type { Sql } from '../store/db.js';
import { finishConversation, type NewRecording } from '../store/conversations.js';
import {
  abandonedConversations,
  endAbandonedConversation,
  leftoverConversations,
  recordingFileOwners,
  releaseLeasesOfNode,
  type AbandonedConversation,
} from '../store/recovery.js';

export interface RecoveryDeps {
  sql: Sql;
  log: Logger;
  /** PARLEY_DATA_DIR: this node's recordings are under `<dataDir>/recordings/`. */
  dataDir: string;
  /** The node_id this node writes on its conversations (PARLEY_NODE_ID, null for an unnamed node). */
  nodeId: string | null;
  /** The name this node's leases and heartbeats go under (src/store/leases.ts leasePolicy). */
  leaseNodeId: string;
}

export interface RecoveryReport {
  /** Records ended by this recovery. */
  ended: number;
  /** Recording files attached to their records, and removed. */
  attached: number;
  removed: number;
  /** Leases of this node freed (start-up only). */
  leasesFreed: number;
}

/** A recording file as the recorder names it while it writes: `<conversation id>.wav` (src/conversation/record.ts). */
const LIVE_RECORDING = /^(conv_[0-9a-f-]{36})\.wav$/;
/** Files looked up per statement when the recordings directory is scanned. */
const FILES_PER_QUERY = 500;
/** Stereo 16-bit PCM (src/media/recording.ts): bytes per sample pair. */
const BYTES_PER_PAIR = 4;

/** A recording repaired to what reached the disk. */
interface RepairedWav {
  sampleRate: number;
  bytes: number;
  durationMs: number;
}

/**
 * Patches the RIFF and data sizes of a recording whose writer was killed (it writes them only at the end) from the
 * file's size, cut back to whole sample pairs (Microsoft RIFF: the canonical 44-byte PCM header). null when the file
 * is not a stereo 16-bit PCM WAV as the recorder writes them (left alone), or holds no audio.
 */
export async function repairWav(path: string): Promise<RepairedWav | null> {
  const file = await open(path, 'r+');
  try {
    const head = Buffer.alloc(WAV_HEADER_BYTES);
    const { bytesRead } = await file.read(head, 0, WAV_HEADER_BYTES, 0);
    if (bytesRead < WAV_HEADER_BYTES) return null;
    const ours =
      head.toString('ascii', 0, 4) === 'RIFF' &&
      head.toString('ascii', 8, 12) === 'WAVE' &&
      head.toString('ascii', 12, 16) === 'fmt ' &&
      head.readUInt16LE(22) === 2 &&
      head.readUInt16LE(34) === 16 &&
      head.toString('ascii', 36, 40) === 'data';
    if (!ours) return null;
    const sampleRate = head.readUInt32LE(24);
    const { size } = await file.stat();
    const dataBytes = Math.floor((size - WAV_HEADER_BYTES) / BYTES_PER_PAIR) * BYTES_PER_PAIR;
    if (dataBytes <= 0 || sampleRate <= 0) return null;
    if (size !== WAV_HEADER_BYTES + dataBytes) await file.truncate(WAV_HEADER_BYTES + dataBytes);
    head.writeUInt32LE(36 + dataBytes, 4);
    head.writeUInt32LE(dataBytes, 40);
    await file.write(head, 0, WAV_HEADER_BYTES, 0);
    await file.sync();
    return {
      sampleRate,
      bytes: WAV_HEADER_BYTES + dataBytes,
      durationMs: (dataBytes / BYTES_PER_PAIR / sampleRate) * 1000,
    };
  } finally {
    await file.close();
  }
}

function emptyReport(): RecoveryReport {
  return { ended: 0, attached: 0, removed: 0, leasesFreed: 0 };
}

/** The recording file this node would have written for a conversation, if it is on its disk. */
async function ownRecording(deps: RecoveryDeps, id: string): Promise<string | null> {
  const path = join(deps.dataDir, RECORDINGS_DIR, `${id}.wav`);
  try {
    return (await stat(path)).isFile() ? path : null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

async function removeFile(
  deps: RecoveryDeps,
  path: string,
  conversationId: string,
  why: string,
  report: RecoveryReport,
): Promise<void> {
  try {
    await unlink(path);
    report.removed++;
    deps.log.info({ conversationId, path }, `recovery: recording removed (${why})`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/**
 * Attaches this node's recording file to its ended record (a side with a row keeps it; a record that retains nothing
 * or whose recordings were deleted refuses it), or removes the file when the record will not have it.
 */
async function attachRecording(deps: RecoveryDeps, id: string, path: string, report: RecoveryReport): Promise<void> {
  const wav = await repairWav(path);
  if (!wav) {
    // Only a header (the conversation ended before its first second of audio was written), or not ours.
    const { size } = await stat(path);
    if (size <= WAV_HEADER_BYTES) await removeFile(deps, path, id, 'no audio reached it', report);
    else
      deps.log.warn({ conversationId: id, path }, 'recovery: a recording file that is not a WAV of ours: left alone');
    return;
  }
  const recording: NewRecording = {
    side: 'both',
    path: `${id}.wav`,
    format: 'wav',
    sample_rate: wav.sampleRate,
    channels: 2,
    bytes: wav.bytes,
    // As the record wants it (src/conversation/record.ts): the node's compressions resume it (recording-resume.ts).
    compress_to: 'wav.gz',
  };
  // On an ended record a finish keeps its ending and only fills in what it left empty: here, the recording.
  const outcome = await finishConversation(deps.sql, id, { ended_by: 'error', ended_at: new Date() }, [recording]);
  if (outcome.recordingsStored) {
    report.attached++;
    deps.log.info(
      { conversationId: id, path, durationMs: wav.durationMs },
      'recovery: recording repaired and attached',
    );
    return;
  }
  await removeFile(deps, path, id, 'the record does not keep it (deleted, zero data retention, or it has one)', report);
}

/** Ends one abandoned conversation; with this node's recording file, its length counts and the file is attached. */
async function recoverOne(
  deps: RecoveryDeps,
  c: AbandonedConversation,
  ownLeases: string | null,
  report: RecoveryReport,
): Promise<void> {
  const mine = c.node_id === deps.nodeId;
  const path = mine ? await ownRecording(deps, c.id) : null;
  const wav = path ? await repairWav(path) : null;
  const ending = await endAbandonedConversation(deps.sql, c.id, wav?.durationMs ?? 0, ownLeases);
  if (!ending) return; // another node (or the conversation) ended it first
  report.ended++;
  deps.log.warn(
    { conversationId: c.id, nodeId: c.node_id, durationMs: ending.duration_ms },
    'recovery: a conversation left in progress by a node that died was ended (ended_by error)',
  );
  if (path) await attachRecording(deps, c.id, path, report);
}

/**
 * At start-up, before anything of this run is live: ends this node's leftovers, frees its leases, and attaches or
 * removes every recording file of its own that no row points at.
 */
export async function recoverAtStart(deps: RecoveryDeps): Promise<RecoveryReport> {
  const report = emptyReport();
  for (const c of await leftoverConversations(deps.sql, deps.leaseNodeId, deps.nodeId))
    await recoverOne(deps, c, deps.leaseNodeId, report);
  report.leasesFreed = await releaseLeasesOfNode(deps.sql, deps.leaseNodeId);
  await recoverRecordingFiles(deps, report);
  if (report.ended + report.attached + report.removed + report.leasesFreed > 0)
    deps.log.info(report, 'recovery at start-up');
  return report;
}

/** Recording files of this node's ended conversations that no row points at: attached, or removed. */
async function recoverRecordingFiles(deps: RecoveryDeps, report: RecoveryReport): Promise<void> {
  const dir = join(deps.dataDir, RECORDINGS_DIR);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const files = names.flatMap((name) => {
    const m = LIVE_RECORDING.exec(name);
    return m ? [{ id: m[1]!, path: name }] : [];
  });
  for (let i = 0; i < files.length; i += FILES_PER_QUERY) {
    for (const owner of await recordingFileOwners(deps.sql, files.slice(i, i + FILES_PER_QUERY))) {
      if (owner.referenced) continue;
      const path = join(dir, `${owner.id}.wav`);
      // No record anywhere: nobody could serve or delete it.
      if (!owner.exists) await removeFile(deps, path, owner.id, 'its conversation does not exist', report);
      // In progress (live on a node sharing the directory), or another node's: not this node's to touch.
      else if (owner.ended && owner.node_id === deps.nodeId) await attachRecording(deps, owner.id, path, report);
    }
  }
}

export interface SweepOptions {
  /** Conversations live in this process, never recovered (their lease may have lapsed in a database outage). */
  isLive(conversationId: string): boolean;
  /** A conversation younger than this is not looked at (PARLEY_LEASE_TTL_SEC). */
  minAgeSec: number;
  /** Conversations ended per sweep at most. */
  limit: number;
}

/** Ends conversations of any node that hold no lease in force (their node died); exactly once across nodes. */
export async function recoverAbandoned(deps: RecoveryDeps, opts: SweepOptions): Promise<RecoveryReport> {
  const report = emptyReport();
  for (const c of await abandonedConversations(deps.sql, opts.minAgeSec, opts.limit)) {
    if (opts.isLive(c.id)) continue;
    await recoverOne(deps, c, null, report);
  }
  return report;
}

/** The sweep of recoverAbandoned every `everyMs`, one at a time; a failed sweep is logged and the next tries again. */
export function startRecoverySweep(
  deps: RecoveryDeps,
  opts: SweepOptions & { everyMs: number },
): { sweep(): Promise<void>; stop(): Promise<void> } {
  let inFlight: Promise<void> | null = null;
  const sweep = (): Promise<void> => {
    inFlight ??= recoverAbandoned(deps, opts)
      .then(
        (report) => {
          if (report.ended > 0) deps.log.info(report, 'recovery: abandoned conversations ended');
        },
        (err: Error) =>
          deps.log.error({ err }, 'recovery: the sweep for abandoned conversations failed; the next one tries again'),
      )
      .finally(() => {
        inFlight = null;
      });
    return inFlight;
  };
  const timer = setInterval(() => void sweep(), opts.everyMs);
  timer.unref();
  return {
    sweep,
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}
