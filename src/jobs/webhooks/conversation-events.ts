// The webhook events of a conversation (README, "Webhooks"): `conversation.ended` for every conversation whose
// record is finished, `conversation.failed` besides it when it ended on an error or a configuration endpoint's
// failure, both raised in the transaction of that finish (src/store/conversations.ts finishConversation,
// onFirstFinish); `conversation.analyzed` once its post-call analysis has settled, raised by the
// `conversation_analyzed` job (./analyzed.ts). Payloads carry identifiers and outcomes, never what was said.
import type { FinishedConversation } from '../../store/conversations.js';
import type { Tx } from '../../store/transaction.js';
import type { EndedBy } from '../../schemas/conversations.js';
import type { WebhookEvent } from '../../schemas/webhooks.js';
import { enqueueQueuedJob, enqueueWebhookEvent } from './events.js';

/** The endings that also raise `conversation.failed`: the conversation could not run as configured. */
export const FAILED_ENDINGS: readonly EndedBy[] = [
  'error',
  'configuration_endpoint_timed_out',
  'configuration_endpoint_error',
  'configuration_endpoint_invalid_response',
];

/** The events a finished conversation raises: `conversation.ended`, and `conversation.failed` for a failed ending. */
export function conversationEndEvents(c: FinishedConversation): WebhookEvent[] {
  const data = {
    agent: c.agent,
    origin: c.origin,
    external_id: c.externalId,
    ended_by: c.endedBy,
    started_at: c.startedAt?.toISOString() ?? null,
    ended_at: c.endedAt.toISOString(),
    duration_ms: c.durationMs,
  };
  const events: WebhookEvent[] = [{ type: 'conversation.ended', projectId: c.projectId, conversationId: c.id, data }];
  if (FAILED_ENDINGS.includes(c.endedBy)) {
    events.push({ type: 'conversation.failed', projectId: c.projectId, conversationId: c.id, data });
  }
  return events;
}

/**
 * Raises the end's events in the finish's transaction (finishConversation's onFirstFinish): a delivery and a
 * `webhook_delivery` job per listening endpoint, committed with the finish or not at all.
 */
export async function raiseConversationEnd(tx: Tx, c: FinishedConversation): Promise<void> {
  const at = new Date();
  for (const e of conversationEndEvents(c)) await enqueueWebhookEvent(tx, e, enqueueQueuedJob, at);
}
