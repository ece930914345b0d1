// Webhook endpoints of a project: create (the signing secret shown once), list, delete, and the delivery log.
import { successBody } from '../schemas/common.js';
import {
  createdWebhookBody,
  createWebhookBody,
  webhookDeliveriesBody,
  webhookDeliveriesQuery,
  webhookParams,
  webhooksBody,
} from '../schemas/webhooks.js';
import { createWebhook, deleteWebhook, listWebhooks, webhookDeliveries } from '../domain/webhooks.js';
import type { WebhookDeliveryRow, WebhookEndpointRow } from '../store/webhooks.js';
import { projectQuery } from './params.js';
import type { RoutePlugin } from './types.js';

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
    '/webhooks',
    { schema: { tags, querystring: projectQuery, body: createBody, response: { 201: createdWebhookBody } } },
    async (req, reply) => {
      const { url, description, events } = req.body;
      const { endpoint, secret } = await createWebhook(sql, req.auth.orgId, req.query.project, {
        url,
        description,
        events,
      });
      return reply.status(201).send({ webhook: record(endpoint), secret });
    },
  );

  app.get(
    '/webhooks',
    { schema: { tags, querystring: projectQuery, response: { 200: webhooksBody } } },
    async (req) => ({
      webhooks: (await listWebhooks(sql, req.auth.orgId, req.query.project)).map(record),
    }),
  );

  app.delete(
    '/webhooks/:id',
    { schema: { tags, params: webhookParams, response: { 200: successBody } } },
    async (req) => ({
      success: await deleteWebhook(sql, req.auth.orgId, req.params.id),
    }),
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      schema: {
        tags,
        params: webhookParams,
        querystring: webhookDeliveriesQuery,
        response: { 200: webhookDeliveriesBody },
      },
    },
    async (req) => {
      const page = await webhookDeliveries(sql, req.auth.orgId, req.params.id, {
        limit: req.query.limit,
        after: req.query.after,
      });
      return { deliveries: page.deliveries.map(deliveryRecord), pagination: { next_cursor: page.nextCursor } };
    },
  );
};
