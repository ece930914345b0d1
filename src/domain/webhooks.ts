// Webhook endpoints of a project: created (the signing secret returned once), listed, deleted, and their delivery
// log. Deliveries themselves are jobs (src/jobs/webhooks/).
import { newWebhookSecret } from '../jobs/webhooks/signature.js';
import { WEBHOOK_MAX_ENDPOINTS, type WebhookEventType } from '../schemas/webhooks.js';
import type { Sql } from '../store/db.js';
import {
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  insertWebhookEndpoint,
  listWebhookDeliveries,
  listWebhookEndpoints,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
} from '../store/webhooks.js';
import { conflict } from './errors.js';
import { ownedBy } from './ownership.js';
import { resolveProject } from './projects.js';

export interface NewWebhook {
  url: string;
  description: string | null;
  events: WebhookEventType[];
}

/** Creates an endpoint in the project `project` names; conflict `limit_reached` past the per-project maximum. */
export async function createWebhook(
  sql: Sql,
  orgId: string,
  project: string,
  hook: NewWebhook,
): Promise<{ endpoint: WebhookEndpointRow; secret: string }> {
  const p = await resolveProject(sql, orgId, project);
  const secret = newWebhookSecret();
  const endpoint = await insertWebhookEndpoint(
    sql,
    { orgId: p.org_id, projectId: p.id, ...hook, secret },
    WEBHOOK_MAX_ENDPOINTS,
  );
  if (!endpoint) throw conflict(`a project has at most ${WEBHOOK_MAX_ENDPOINTS} webhook endpoints`, 'limit_reached');
  return { endpoint, secret };
}

/** The project's endpoints. */
export async function listWebhooks(sql: Sql, orgId: string, project: string): Promise<WebhookEndpointRow[]> {
  const p = await resolveProject(sql, orgId, project);
  return listWebhookEndpoints(sql, p.id);
}

/** The endpoint `id` of the caller's workspace: not_found when missing, forbidden when another workspace's. */
async function ownedWebhook(sql: Sql, orgId: string, id: string): Promise<WebhookEndpointRow> {
  return ownedBy((await getWebhookEndpoint(sql, id)) ?? undefined, orgId, 'webhook', id);
}

/** Deletes an endpoint (its pending deliveries are dropped with it); whether a row went. */
export async function deleteWebhook(sql: Sql, orgId: string, id: string): Promise<boolean> {
  const row = await ownedWebhook(sql, orgId, id);
  return deleteWebhookEndpoint(sql, row.id);
}

/** A page of an endpoint's delivery log, newest first. */
export async function webhookDeliveries(
  sql: Sql,
  orgId: string,
  id: string,
  page: { limit: number; after?: string },
): Promise<{ deliveries: WebhookDeliveryRow[]; nextCursor: string | null }> {
  const row = await ownedWebhook(sql, orgId, id);
  return listWebhookDeliveries(sql, row.id, page);
}
