// Raising a webhook event: one delivery row per subscribed endpoint of the project and one delivery job each,
// written in the caller's transaction (the conversation's end and its event commit together, or neither does).
import { randomUUID } from 'node:crypto';
import { enqueueJob } from '../../store/jobs.js';
import { insertDeliveries, type Db } from '../../store/webhooks.js';
import { webhookEvent, type WebhookEvent } from '../../schemas/webhooks.js';
import { WEBHOOK_DELIVERY_KIND, type WebhookDeliveryPayload } from './delivery.js';

/** Enqueues a durable job in the given transaction (the queue's enqueue, bound by the caller). */
export type EnqueueJob = (db: Db, kind: string, payload: unknown) => Promise<unknown>;

/** The queue's enqueue (a row of `jobs`, src/store/jobs.ts), in the caller's transaction: what producers bind. */
export const enqueueQueuedJob: EnqueueJob = (db, kind, payload) =>
  enqueueJob(db, { kind, payload: payload as Record<string, unknown> });

/** What enqueueWebhookEvent did: the event's id (the `webhook-id` every endpoint gets) and one delivery per endpoint. */
export interface EnqueuedEvent {
  eventId: string;
  deliveryIds: string[];
}

/**
 * The body sent for an event (Standard Webhooks' recommended shape): `{type, timestamp, data}`, `data` carrying the
 * conversation's and project's ids and the producer's fields (identifiers and outcomes, never transcripts).
 */
export function webhookBody(e: WebhookEvent, eventId: string, at: Date): string {
  const ev = webhookEvent.parse(e);
  return JSON.stringify({
    id: eventId,
    type: ev.type,
    timestamp: at.toISOString(),
    data: { ...ev.data, conversation_id: ev.conversationId, project_id: ev.projectId },
  });
}

/**
 * Raises an event: a delivery for every endpoint of the project that listens to its type, each with a
 * `webhook_delivery` job. Call it inside the transaction that makes the event true. `eventId` (default: a new one)
 * names the event: raised again under the same id, an endpoint that has it already gets nothing more, so a
 * producer that may run twice (a retried job) delivers once.
 */
export async function enqueueWebhookEvent(
  db: Db,
  e: WebhookEvent,
  enqueueJob: EnqueueJob,
  at = new Date(),
  eventId = `evt_${randomUUID()}`,
): Promise<EnqueuedEvent> {
  const ev = webhookEvent.parse(e);
  const deliveryIds = await insertDeliveries(db, {
    eventId,
    type: ev.type,
    projectId: ev.projectId,
    conversationId: ev.conversationId,
    body: webhookBody(ev, eventId, at),
  });
  for (const id of deliveryIds) {
    const payload: WebhookDeliveryPayload = { delivery_id: id };
    await enqueueJob(db, WEBHOOK_DELIVERY_KIND, payload);
  }
  return { eventId, deliveryIds };
}
