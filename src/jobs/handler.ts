// The contract of durable background work (post-call transcript, extraction, evaluations, redaction, retention,
// delivery): a job is a row in the database; a handler of its kind runs it on main, on any node that claims it.
import type { Settings } from '../config.js';
import type { Logger } from '../log.js';
import type { Sql } from '../store/db.js';

/** What a running job may use: main's database handle, the node's settings, a logger, the clock, outbound HTTP. */
export interface JobContext {
  sql: Sql;
  settings: Settings;
  log: Logger;
  now(): Date;
  /** Outbound HTTP to URLs customers configure (webhook endpoints, buckets): the guarded client. */
  fetch: typeof fetch;
  /**
   * Outbound HTTP to the model servers the operator configured (PARLEY_LLM_*, PARLEY_STT_*): not guarded, since
   * they are settings of the node and often on a private network.
   */
  modelFetch: typeof fetch;
  /** Aborted when the node stops: a handler gives up promptly and the job is claimed again later. */
  signal: AbortSignal;
}

/**
 * How a job ended. Throwing is failure: the job is retried with backoff and parked with its error after its last
 * attempt. `skipped` is an outcome the user sees (the reason says why nothing was done, e.g. no model configured).
 */
export type JobOutcome = { status: 'done'; detail?: Record<string, unknown> } | { status: 'skipped'; reason: string };

export interface JobHandler<Payload = unknown> {
  /** The kind stored on the job's row, e.g. `post_call_transcript`; unique among handlers. */
  readonly kind: string;
  /** Attempts before the job is parked as failed (default: the queue's). */
  readonly maxAttempts?: number;
  /** Validates a payload read back from the database (a bad one parks the job at once). */
  parse(payload: unknown): Payload;
  run(payload: Payload, ctx: JobContext): Promise<JobOutcome>;
}
