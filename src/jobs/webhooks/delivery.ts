// The job that sends one webhook delivery: signs its stored body for this attempt (Standard Webhooks headers),
// POSTs it through the job's fetch, and logs the attempt. A 2xx answer delivers it; anything else (another status,
// no answer in time, a refused connection) throws, so the queue retries it with backoff; the attempt that reaches
// `maxAttempts` marks the delivery failed in the log before the queue parks the job.
import { z } from 'zod';
import { JOB_KINDS } from '../../store/jobs.js';
import { getPendingDelivery, recordDeliveryAttempt } from '../../store/webhooks.js';
import type { JobContext, JobHandler, JobOutcome } from '../handler.js';
import { webhookHeaders } from './signature.js';

export const WEBHOOK_DELIVERY_KIND = JOB_KINDS.webhookDelivery;
/** Attempts before a delivery is marked failed: with the queue's backoff (5 s doubling), about ten minutes of retries. */
export const WEBHOOK_MAX_ATTEMPTS = 8;
/** An endpoint must answer within this (Standard Webhooks advises receivers to answer quickly, then work). */
export const WEBHOOK_TIMEOUT_MS = 15_000;
/** Characters of a failed answer's body kept in the log. */
const ERROR_BODY_EXCERPT = 200;
const USER_AGENT = 'Parley-Webhooks/1';

const payloadSchema = z.object({ delivery_id: z.string().min(1) });
export type WebhookDeliveryPayload = z.infer<typeof payloadSchema>;

/** A delivery attempt that did not get a 2xx: the queue retries the job. */
export class WebhookDeliveryError extends Error {
  constructor(
    message: string,
    readonly statusCode: number | null,
  ) {
    super(message);
    this.name = 'WebhookDeliveryError';
  }
}

export interface WebhookDeliveryOptions {
  maxAttempts?: number;
  timeoutMs?: number;
}

/** Reads at most `limit` characters of a body and drops the rest unread. */
async function excerpt(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const reader: ReadableStreamDefaultReader<Uint8Array> = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (text.length < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return text.slice(0, limit);
}

export function webhookDeliveryHandler(opts: WebhookDeliveryOptions = {}): JobHandler<WebhookDeliveryPayload> {
  const maxAttempts = opts.maxAttempts ?? WEBHOOK_MAX_ATTEMPTS;
  const timeoutMs = opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  return {
    kind: WEBHOOK_DELIVERY_KIND,
    maxAttempts,
    parse: (payload) => payloadSchema.parse(payload),
    async run(payload, ctx: JobContext): Promise<JobOutcome> {
      const d = await getPendingDelivery(ctx.sql, payload.delivery_id);
      if (!d) return { status: 'skipped', reason: 'the delivery or its webhook endpoint was deleted' };
      if (d.status === 'succeeded') return { status: 'done', detail: { already_delivered: true } };
      if (d.status === 'failed')
        return { status: 'skipped', reason: `the delivery gave up after ${d.attempts} attempts` };
      const at = ctx.now();
      const headers = {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        ...webhookHeaders(d.secret, d.event_id, at, d.body),
      };
      const final = d.attempts + 1 >= maxAttempts;
      let status: number | null = null;
      let error: string | null = null;
      try {
        const res = await ctx.fetch(d.url, {
          method: 'POST',
          headers,
          body: d.body,
          // A redirect is not followed: the endpoint's URL is the one the user registered and we validated.
          redirect: 'manual',
          signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]),
        });
        status = res.status;
        const text = await excerpt(res, ERROR_BODY_EXCERPT);
        if (res.status < 200 || res.status > 299) error = `HTTP ${res.status}${text ? `: ${text}` : ''}`;
      } catch (err) {
        // The node is stopping: not an attempt of the endpoint's; the job is claimed again later.
        if (ctx.signal.aborted) throw err;
        const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
        error =
          (err as Error).name === 'TimeoutError'
            ? `no answer within ${timeoutMs} ms`
            : `${(err as Error).message}${cause?.message ? `: ${cause.message}` : ''}`;
      }
      const outcome = error === null ? 'succeeded' : final ? 'failed' : 'pending';
      const attempts = await recordDeliveryAttempt(ctx.sql, d.id, {
        status: outcome,
        responseStatusCode: status,
        error,
        at,
      });
      if (error === null) return { status: 'done', detail: { status_code: status, attempts } };
      ctx.log.warn({ deliveryId: d.id, endpointId: d.endpoint_id, attempts, final, error }, 'webhook delivery failed');
      throw new WebhookDeliveryError(`webhook delivery ${d.id} to ${new URL(d.url).host} failed: ${error}`, status);
    },
  };
}
