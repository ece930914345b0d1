// Webhooks repository: a project's endpoints, the deliveries an event fans out to, and their log.
import type { Sql } from './db.js';
import { newId } from './ids.js';
import { transaction, type Tx } from './transaction.js';
import type { WebhookDeliveryStatus, WebhookEventType } from '../schemas/webhooks.js';

/** The pool or a transaction of it: an event is enqueued in the transaction that ends or analyzes a conversation. */
export type Db = Sql | Tx;

export interface WebhookEndpointRow {
  id: string;
  org_id: string;
  project_id: string;
  url: string;
  description: string | null;
  events: WebhookEventType[];
  secret: string;
  created_at: Date;
}

export interface WebhookDeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: WebhookEventType;
  conversation_id: string | null;
  body: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  response_status_code: number | null;
  error: string | null;
  created_at: Date;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
}

/** A delivery with what sending it needs from its endpoint. */
export interface PendingDelivery extends WebhookDeliveryRow {
  url: string;
  secret: string;
}

/**
 * Adds an endpoint unless the project has `maxEndpoints` already; null when it has. The project's row is locked
 * first and the endpoints counted after, in a statement of their own, so two creations at once cannot both pass.
 */
export async function insertWebhookEndpoint(
  sql: Sql,
  e: {
    orgId: string;
    projectId: string;
    url: string;
    description: string | null;
    events: WebhookEventType[];
    secret: string;
  },
  maxEndpoints: number,
): Promise<WebhookEndpointRow | null> {
  return transaction(sql, async (tx) => {
    await tx`select id from projects where id = ${e.projectId} for update`;
    const [{ n }] = await tx<
      { n: number }[]
    >`select count(*)::int as n from webhook_endpoints where project_id = ${e.projectId}`;
    if (n >= maxEndpoints) return null;
    const [row] = await tx<WebhookEndpointRow[]>`
      insert into webhook_endpoints (id, org_id, project_id, url, description, events, secret)
      values (${newId('webhook')}, ${e.orgId}, ${e.projectId}, ${e.url}, ${e.description}, ${tx.json(e.events)}, ${e.secret})
      returning *`;
    return row;
  });
}

export async function listWebhookEndpoints(sql: Sql, projectId: string): Promise<WebhookEndpointRow[]> {
  return sql<
    WebhookEndpointRow[]
  >`select * from webhook_endpoints where project_id = ${projectId} order by created_at, id`;
}

export async function getWebhookEndpoint(sql: Sql, id: string): Promise<WebhookEndpointRow | null> {
  const [row] = await sql<WebhookEndpointRow[]>`select * from webhook_endpoints where id = ${id}`;
  return row ?? null;
}

/** Removes an endpoint and its delivery log; deliveries still queued find nothing and are skipped. */
export async function deleteWebhookEndpoint(sql: Sql, id: string): Promise<boolean> {
  const rows = await sql`delete from webhook_endpoints where id = ${id} returning id`;
  return rows.length > 0;
}

/**
 * One delivery per endpoint of the project subscribed to the event's type, all with the same event id and body;
 * returns their ids (none when no endpoint listens). An endpoint that has a delivery of this event id already keeps
 * it and gets no other (an event raised again under its id is delivered once).
 */
export async function insertDeliveries(
  db: Db,
  e: { eventId: string; type: WebhookEventType; projectId: string; conversationId: string | null; body: string },
): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    insert into webhook_deliveries (id, endpoint_id, event_id, event_type, conversation_id, body)
    select 'whdel_' || gen_random_uuid()::text, w.id, ${e.eventId}, ${e.type}, ${e.conversationId}, ${e.body}
    from webhook_endpoints w
    where w.project_id = ${e.projectId} and w.events @> ${db.json([e.type])}
    order by w.created_at, w.id
    on conflict (endpoint_id, event_id) do nothing
    returning id`;
  return rows.map((r) => r.id);
}

/** How many endpoints of the project listen to events of `type`. */
export async function countListeningEndpoints(db: Db, projectId: string, type: WebhookEventType): Promise<number> {
  const [row] = await db<{ n: number }[]>`select count(*)::int as n from webhook_endpoints
    where project_id = ${projectId} and events @> ${db.json([type])}`;
  return row.n;
}

/** A delivery with its endpoint's URL and secret; null when it (or its endpoint) was deleted. */
export async function getPendingDelivery(sql: Sql, id: string): Promise<PendingDelivery | null> {
  const [row] = await sql<PendingDelivery[]>`
    select d.*, w.url, w.secret from webhook_deliveries d join webhook_endpoints w on w.id = d.endpoint_id
    where d.id = ${id}`;
  return row ?? null;
}

/**
 * Records one attempt: its answer (or why there was none) and the delivery's new status; returns the attempts made
 * so far. A delivery that succeeded is never changed again.
 */
export async function recordDeliveryAttempt(
  sql: Sql,
  id: string,
  a: { status: WebhookDeliveryStatus; responseStatusCode: number | null; error: string | null; at: Date },
): Promise<number | null> {
  const [row] = await sql<{ attempts: number }[]>`
    update webhook_deliveries set
      attempts = attempts + 1,
      status = ${a.status},
      response_status_code = ${a.responseStatusCode},
      error = ${a.error},
      last_attempt_at = ${a.at},
      delivered_at = ${a.status === 'succeeded' ? a.at : null}
    where id = ${id} and status <> 'succeeded'
    returning attempts`;
  return row?.attempts ?? null;
}

/** The log of an endpoint, newest first, `limit` at a time after the delivery `after` (a cursor). */
export async function listWebhookDeliveries(
  sql: Sql,
  endpointId: string,
  page: { limit: number; after?: string },
): Promise<{ deliveries: WebhookDeliveryRow[]; nextCursor: string | null }> {
  const cursor = page.after
    ? sql`and (d.created_at, d.id) < (select created_at, id from webhook_deliveries where id = ${page.after} and endpoint_id = ${endpointId})`
    : sql``;
  const rows = await sql<WebhookDeliveryRow[]>`
    select d.* from webhook_deliveries d where d.endpoint_id = ${endpointId} ${cursor}
    order by d.created_at desc, d.id desc limit ${page.limit + 1}`;
  const more = rows.length > page.limit;
  const deliveries = rows.slice(0, page.limit);
  return { deliveries, nextCursor: more ? deliveries[deliveries.length - 1].id : null };
}
