// The jobs a node runs: every handler registered here, and the node's queue over them (started by main.ts after the
// migrations, stopped before the store closes). A new kind of job is a handler added to `jobHandlers`; a kind of the
// post-call pipeline (src/store/jobs.ts POST_CALL_JOBS) without a handler here stops start-up.
import type { Settings } from '../config.js';
import type { Logger } from '../log.js';
import type { Sql } from '../store/db.js';
import { JOB_KINDS, POST_CALL_JOBS } from '../store/jobs.js';
import { evaluationHandler } from './evaluation.js';
import { extractionHandler } from './extraction.js';
import type { JobHandler } from './handler.js';
import { postCallTranscriptHandler } from './post-call-transcript.js';
import { createJobQueue, type JobQueue, type JobQueueOptions, type RecurringJob } from './queue.js';
import { redactionHandler } from './redaction/handler.js';
import { recordingFilesRemovalHandler, retentionSweepHandler } from './retention.js';
import { conversationAnalyzedHandler } from './webhooks/analyzed.js';
import { webhookDeliveryHandler } from './webhooks/delivery.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function jobHandlers(): JobHandler<any>[] {
  return [
    postCallTranscriptHandler(),
    extractionHandler(),
    evaluationHandler(),
    redactionHandler(),
    conversationAnalyzedHandler(),
    webhookDeliveryHandler(),
    retentionSweepHandler(),
    recordingFilesRemovalHandler(),
  ];
}

/** The recurring jobs: the retention sweep every PARLEY_RETENTION_SWEEP_SEC. */
export function recurringJobs(settings: Settings): RecurringJob[] {
  return [{ kind: JOB_KINDS.retentionSweep, everyMs: settings.PARLEY_RETENTION_SWEEP_SEC * 1000 }];
}

/** The node's queue: every handler, the recurring jobs, the pipeline's kinds required. */
export function createNodeJobQueue(
  deps: { sql: Sql; settings: Settings; log: Logger } & Partial<Omit<JobQueueOptions, 'sql' | 'settings' | 'log'>>,
): JobQueue {
  return createJobQueue({
    handlers: jobHandlers(),
    recurring: recurringJobs(deps.settings),
    requiredKinds: POST_CALL_JOBS.map((j) => j.kind),
    ...deps,
  });
}
