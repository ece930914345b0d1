// Retention: the recurring `retention_sweep` job deletes what a conversation's data_retention_policy no longer
// keeps, counted from its end: transcripts after `transcripts.delete_after_hours` (the record's and items' texts,
// the post-call words, tool-call bodies; `deletion_info.transcripts_deleted_at`), recordings after
// `audio_recordings.delete_after_hours` (rows, then files through `recording_files_removal` jobs;
// `deletion_info.audio_recordings_deleted_at`). Idempotent: a swept conversation is never swept again. Zero data
// retention keeps nothing to sweep (the store refuses it at every write). The sweep also deletes settled one-off
// jobs of no conversation (the file removals) a week old.
import { unlink } from 'node:fs/promises';
import { z } from 'zod';
import { recordingPath } from '../media/recording.js';
import { JOB_KINDS, pruneSettledJobs } from '../store/jobs.js';
import { sweepRecordings, sweepTranscripts } from '../store/post-call.js';
import type { JobContext, JobHandler, JobOutcome } from './handler.js';

/** Conversations swept per statement. */
export const SWEEP_BATCH = 200;
/** Statements per kind of artifact per run: the rest is left to the next run, so one run stays short. */
const SWEEP_BATCHES_PER_RUN = 50;
/** Settled one-off jobs of no conversation (file removals) are kept this long, then deleted by the sweep. */
export const SETTLED_JOBS_KEPT_MS = 7 * 24 * 3_600_000;

async function sweep(ctx: JobContext): Promise<JobOutcome> {
  let transcripts = 0;
  let conversations = 0;
  let recordings = 0;
  for (let i = 0; i < SWEEP_BATCHES_PER_RUN && !ctx.signal.aborted; i++) {
    const n = await sweepTranscripts(ctx.sql, ctx.now(), SWEEP_BATCH);
    transcripts += n;
    if (n < SWEEP_BATCH) break;
  }
  for (let i = 0; i < SWEEP_BATCHES_PER_RUN && !ctx.signal.aborted; i++) {
    const r = await sweepRecordings(ctx.sql, ctx.now(), SWEEP_BATCH);
    conversations += r.conversations;
    recordings += r.recordings;
    if (r.conversations < SWEEP_BATCH) break;
  }
  if (transcripts + conversations > 0) {
    ctx.log.info(
      { transcripts, audio: conversations, recordings },
      'retention: deleted what the policies no longer keep',
    );
  }
  const jobs = await pruneSettledJobs(ctx.sql, new Date(ctx.now().getTime() - SETTLED_JOBS_KEPT_MS));
  return { status: 'done', detail: { transcripts, audio: conversations, recordings, jobs } };
}

export function retentionSweepHandler(): JobHandler<unknown> {
  return { kind: JOB_KINDS.retentionSweep, parse: (p) => p, run: (_p, ctx) => sweep(ctx) };
}

const removalPayload = z.object({ paths: z.array(z.string().min(1)) });
type RemovalPayload = z.infer<typeof removalPayload>;

/** Removes the files of deleted recordings (paths relative to the recordings directory); one already gone is fine. */
async function removeFiles(payload: RemovalPayload, ctx: JobContext): Promise<JobOutcome> {
  let removed = 0;
  for (const path of payload.paths) {
    try {
      await unlink(recordingPath(ctx.settings.PARLEY_DATA_DIR, path));
      removed++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return { status: 'done', detail: { files: payload.paths.length, removed } };
}

export function recordingFilesRemovalHandler(): JobHandler<RemovalPayload> {
  return { kind: JOB_KINDS.recordingFilesRemoval, parse: (p) => removalPayload.parse(p), run: removeFiles };
}
