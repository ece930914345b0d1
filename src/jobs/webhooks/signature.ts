// Standard Webhooks signatures (standardwebhooks.com, "Signature scheme"): HMAC-SHA256, keyed by the base64 part of
// a `whsec_` secret, over `{webhook-id}.{webhook-timestamp}.{body}`, sent as `webhook-signature: v1,<base64>`.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
/** Standard Webhooks asks for 24 to 64 random bytes of key. */
const SECRET_BYTES = 32;

/** A new signing secret, `whsec_<base64 of 32 random bytes>`. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The `webhook-signature` header value of one message. */
export function signWebhook(secret: string, msgId: string, timestampSec: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  const mac = createHmac('sha256', key).update(`${msgId}.${timestampSec}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The headers that sign one attempt: the id stays the same across attempts, the timestamp is the attempt's. */
export function webhookHeaders(secret: string, msgId: string, at: Date, body: string): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(secret, msgId, timestamp, body),
  };
}
