// Webhook endpoints of a project: create (the signing secret shown once), list, delete, and the delivery log.
import { successBody } from '../schemas/common.js';
import {
  createdWebhookBody,
  createWebhookBody,
  webhookDeliveriesBody,
  webhookDeliveriesQuery,
  webhookParams,
  webhooksBody,
  WEBHOOK_MAX_ENDPOINTS,
} from '../schemas/webhooks.js';
import {
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  insertWebhookEndpoint,
  listWebhookDeliveries,
  listWebhookEndpoints,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
} from '../store/webhooks.js';
import { newWebhookSecret } from '../jobs/webhooks/signature.js';
import { conflict } from './errors.js';
import { ownedBy, projectQuery, resolveProject } from './lookup.js';
import type { RoutePlugin } from './routes.js';

function record(r: WebhookEndpointRow) {
  return { id: r.id, url: r.url, description: r.description, events: r.events, created_at: r.created_at.toISOString() };
}

function deliveryRecord(d: WebhookDeliveryRow) {
  return {
    id: d.id,
    event_id: d.event_id,
    event_type: d.event_type,
    conversation_id: d.conversation_id,
    status: d.status,
    attempts: d.attempts,
    response_status_code: d.response_status_code,
    error: d.error,
    created_at: d.created_at.toISOString(),
    last_attempt_at: d.last_attempt_at?.toISOString() ?? null,
    delivered_at: d.delivered_at?.toISOString() ?? null,
  };
}

export const webhookRoutes: RoutePlugin = async (app, { sql, settings }) => {
  const tags = ['webhooks'];
  const createBody = createWebhookBody(settings);

  app.post(
    '/v1/webhooks',
    { schema: { tags, querystring: projectQuery, body: createBody, response: { 201: createdWebhookBody } } },
    async (req, reply) => {
      const p = await resolveProject(sql, req.auth.orgId, req.query.project);
      const secret = newWebhookSecret();
      const row = await insertWebhookEndpoint(
        sql,
        { orgId: p.org_id, projectId: p.id, url: req.body.url, description: req.body.description, events: req.body.events, secret },
        WEBHOOK_MAX_ENDPOINTS,
      );
      if (!row) throw conflict(`a project has at most ${WEBHOOK_MAX_ENDPOINTS} webhook endpoints`, 'limit_reached');
      return reply.status(201).send({ webhook: record(row), secret });
    },
  );

  app.get('/v1/webhooks', { schema: { tags, querystring: projectQuery, response: { 200: webhooksBody } } }, async (req) => {
    const p = await resolveProject(sql, req.auth.orgId, req.query.project);
    return { webhooks: (await listWebhookEndpoints(sql, p.id)).map(record) };
  });

  app.delete('/v1/webhooks/:id', { schema: { tags, params: webhookParams, response: { 200: successBody } } }, async (req) => {
    const row = ownedBy((await getWebhookEndpoint(sql, req.params.id)) ?? undefined, req.auth.orgId, 'webhook', req.params.id);
    return { success: await deleteWebhookEndpoint(sql, row.id) };
  });

  app.get(
    '/v1/webhooks/:id/deliveries',
    { schema: { tags, params: webhookParams, querystring: webhookDeliveriesQuery, response: { 200: webhookDeliveriesBody } } },
    async (req) => {
      const row = ownedBy((await getWebhookEndpoint(sql, req.params.id)) ?? undefined, req.auth.orgId, 'webhook', req.params.id);
      const page = await listWebhookDeliveries(sql, row.id, { limit: req.query.limit, after: req.query.after });
      return { deliveries: page.deliveries.map(deliveryRecord), pagination: { next_cursor: page.nextCursor } };
    },
  );
};
