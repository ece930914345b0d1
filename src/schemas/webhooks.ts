// Webhooks (/v1/webhooks): a project's endpoints, the events they receive, and the log of deliveries to them.
// Endpoint URLs follow the rule of every outbound URL a user configures (publicly routable HTTPS, no credentials).
import { z } from 'zod';
import { httpsPublicUrl, isoTimestamp, type UrlRules } from './common.js';

/** The events Parley sends: a conversation ended, its post-call analysis is ready, or it failed. */
export const WEBHOOK_EVENT_TYPES = ['conversation.ended', 'conversation.analyzed', 'conversation.failed'] as const;
export const webhookEventType = z.enum(WEBHOOK_EVENT_TYPES);
export type WebhookEventType = z.infer<typeof webhookEventType>;

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** Endpoints per project (Parley's bound: each event fans out to every one of them). */
export const WEBHOOK_MAX_ENDPOINTS = 20;
export const WEBHOOK_DELIVERIES_DEFAULT_LIMIT = 50;
export const WEBHOOK_DELIVERIES_MAX_LIMIT = 200;

export function createWebhookBody(rules: UrlRules) {
  return z
    .object({
      url: httpsPublicUrl(rules).describe('publicly routable HTTPS URL without credentials'),
      description: z.string().max(500).nullable().default(null),
      events: z
        .array(webhookEventType)
        .min(1)
        .transform((list) => [...new Set(list)])
        .default([...WEBHOOK_EVENT_TYPES])
        .describe('event types sent to this endpoint (default: all)'),
    })
    .strict();
}

export const webhook = z.object({
  id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  events: z.array(webhookEventType),
  created_at: isoTimestamp,
});
export type Webhook = z.infer<typeof webhook>;

/** At creation only: the signing secret (`whsec_<base64>`), never shown again. */
export const createdWebhookBody = z.object({ webhook, secret: z.string() });
export const webhooksBody = z.object({ webhooks: z.array(webhook) });
export const webhookParams = z.object({ id: z.string().min(1).max(200) });

export const webhookDeliveriesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(WEBHOOK_DELIVERIES_MAX_LIMIT).default(WEBHOOK_DELIVERIES_DEFAULT_LIMIT),
  after: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('cursor for the next, older page: a delivery id from next_cursor'),
});

export const webhookDelivery = z.object({
  id: z.string(),
  event_id: z.string(),
  event_type: webhookEventType,
  conversation_id: z.string().nullable(),
  status: z.enum(WEBHOOK_DELIVERY_STATUSES),
  attempts: z.number().int(),
  response_status_code: z.number().int().nullable(),
  error: z.string().nullable(),
  created_at: isoTimestamp,
  last_attempt_at: isoTimestamp.nullable(),
  delivered_at: isoTimestamp.nullable(),
});
export const webhookDeliveriesBody = z.object({
  deliveries: z.array(webhookDelivery),
  pagination: z.object({ next_cursor: z.string().nullable() }),
});

/**
 * An event as its producers raise it (the end of a conversation, its analysis, its failure). `data` is sent as is:
 * identifiers and outcomes only, never transcripts (a receiver reads the conversation through the API, where zero
 * data retention and redaction apply).
 */
export const webhookEvent = z.object({
  type: webhookEventType,
  projectId: z.string().min(1),
  conversationId: z.string().min(1).nullable(),
  data: z.record(z.string(), z.unknown()).default({}),
});
export type WebhookEvent = z.input<typeof webhookEvent>;
