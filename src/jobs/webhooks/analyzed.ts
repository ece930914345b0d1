// The `conversation_analyzed` job: the last of the post-call pipeline (src/store/jobs.ts POST_CALL_JOBS), run once
// the post-call transcript, extraction, evaluations and (where enabled) redaction have settled, whatever their
// outcome. It raises `conversation.analyzed` with each of those outcomes (done, skipped with its reason, failed
// with its error), so a receiver knows what it will find through the API and what is missing.
//
// The event's id is derived from the analysis it reports (each job's kind, status and time of settling): the job
// run again after it raised the event but before its outcome was stored raises the same id, which an endpoint that
// has it already does not get twice; an analysis run again (POST .../extractions) is a new event.
import { createHash } from 'node:crypto';
import { ANALYSIS_KINDS, JOB_KINDS, jobsOfConversations, type ConversationJobRow } from '../../store/jobs.js';
import { postCallConversation } from '../../store/post-call.js';
import { transaction } from '../../store/transaction.js';
import { countListeningEndpoints } from '../../store/webhooks.js';
import type { JobContext, JobHandler, JobOutcome } from '../handler.js';
import { conversationJobPayload, type ConversationJobPayload } from '../payload.js';
import { wakeJobQueues } from '../queue.js';
import { enqueueQueuedJob, enqueueWebhookEvent } from './events.js';

const EVENT = 'conversation.analyzed';

/** One job's outcome as the event reports it. */
export type AnalysisOutcome =
  { status: 'done' } | { status: 'skipped'; reason: string } | { status: 'failed'; error: string };

function outcomeOf(j: ConversationJobRow): AnalysisOutcome {
  if (j.status === 'skipped') return { status: 'skipped', reason: j.reason ?? '' };
  if (j.status === 'failed') return { status: 'failed', error: j.error ?? '' };
  return { status: 'done' };
}

/** The event id of an analysis: the same settled jobs give the same id. */
export function analysisEventId(conversationId: string, jobs: readonly ConversationJobRow[]): string {
  const h = createHash('sha256').update(conversationId);
  for (const j of jobs) h.update(`|${j.kind}:${j.status}:${new Date(j.updated_at).toISOString()}`);
  return `evt_${h.digest('hex').slice(0, 32)}`;
}

async function raiseAnalyzed(payload: ConversationJobPayload, ctx: JobContext): Promise<JobOutcome> {
  const id = payload.conversation_id;
  const conv = await postCallConversation(ctx.sql, id);
  if (!conv) return { status: 'skipped', reason: 'the conversation no longer exists' };
  const kinds: readonly string[] = ANALYSIS_KINDS;
  const jobs = (await jobsOfConversations(ctx.sql, [id])).filter((j) => kinds.includes(j.kind));
  const unsettled = jobs.filter((j) => j.status === 'pending' || j.status === 'running');
  // Enqueued after them and claimed only once they settled: one pending again means it is being run again.
  if (unsettled.length > 0)
    throw new Error(`the analysis is not settled: ${unsettled.map((j) => j.kind).join(', ')} still to run`);
  if ((await countListeningEndpoints(ctx.sql, conv.projectId, EVENT)) === 0) {
    return { status: 'skipped', reason: `no webhook endpoint of the project listens to ${EVENT}` };
  }
  const analysis = Object.fromEntries(jobs.map((j) => [j.kind, outcomeOf(j)]));
  const eventId = analysisEventId(id, jobs);
  const raised = await transaction(ctx.sql, (tx) =>
    enqueueWebhookEvent(
      tx,
      { type: EVENT, projectId: conv.projectId, conversationId: id, data: { ended_by: conv.endedBy, analysis } },
      enqueueQueuedJob,
      ctx.now(),
      eventId,
    ),
  );
  wakeJobQueues();
  return { status: 'done', detail: { event_id: eventId, deliveries: raised.deliveryIds.length } };
}

export function conversationAnalyzedHandler(): JobHandler<ConversationJobPayload> {
  return { kind: JOB_KINDS.conversationAnalyzed, parse: (p) => conversationJobPayload.parse(p), run: raiseAnalyzed };
}
