// Webhook delivery jobs against a real HTTP receiver: signatures that the standardwebhooks package verifies, the
// fan-out of an event to the endpoints listening to it, retries that keep the id and body, the log of each attempt,
// giving up after the last attempt, timeouts, deleted endpoints, and a node stopping mid-attempt.
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { DB_KINDS, startTestServer, type TestServer } from '../helpers/server.js';
import { transaction } from '../../src/store/transaction.js';
import { deleteWebhookEndpoint, insertWebhookEndpoint, type Db } from '../../src/store/webhooks.js';
import { enqueueWebhookEvent } from '../../src/jobs/webhooks/events.js';
import {
  WEBHOOK_DELIVERY_KIND,
  WebhookDeliveryError,
  webhookDeliveryHandler,
} from '../../src/jobs/webhooks/delivery.js';
import { newWebhookSecret } from '../../src/jobs/webhooks/signature.js';
import type { WebhookEventType } from '../../src/schemas/webhooks.js';
import { jobContext, startReceiver, type Receiver } from './delivery-helpers.js';

t.setTimeout(300_000);

interface Job {
  kind: string;
  payload: unknown;
}

async function endpoint(
  server: TestServer,
  url: string,
  events: WebhookEventType[] = ['conversation.ended', 'conversation.analyzed', 'conversation.failed'],
) {
  const secret = newWebhookSecret();
  const row = await insertWebhookEndpoint(
    server.sql,
    { orgId: server.orgId, projectId: server.projectId, url, description: null, events, secret },
    20,
  );
  return { id: row!.id, secret };
}

async function raise(server: TestServer, type: WebhookEventType, conversationId = 'conv_1') {
  const jobs: Job[] = [];
  const enqueue = async (_db: Db, kind: string, payload: unknown) => void jobs.push({ kind, payload });
  const ev = await enqueueWebhookEvent(
    server.sql,
    { type, projectId: server.projectId, conversationId, data: { ended_by: 'user' } },
    enqueue,
  );
  return { ...ev, jobs };
}

async function delivery(server: TestServer, id: string) {
  const [row] = await server.sql`select * from webhook_deliveries where id = ${id}`;
  return row!;
}

for (const db of DB_KINDS) {
  t.test(`webhook deliveries on ${db}`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    let receiver: Receiver = await startReceiver();
    t.teardown(() => receiver.close());
    const handler = webhookDeliveryHandler({ maxAttempts: 3, timeoutMs: 300 });
    const ctx = jobContext(server.sql, server.settings);

    t.test('an event reaches every endpoint listening to it, signed as Standard Webhooks verifies', async (t) => {
      await server.sql`delete from webhook_endpoints`;
      const all = await endpoint(server, receiver.url);
      const failedOnly = await endpoint(server, receiver.url, ['conversation.failed']);
      const ev = await raise(server, 'conversation.ended', 'conv_a');
      t.equal(ev.deliveryIds.length, 1, 'only the endpoint listening to conversation.ended gets a delivery');
      t.same(
        ev.jobs,
        [{ kind: WEBHOOK_DELIVERY_KIND, payload: { delivery_id: ev.deliveryIds[0] } }],
        'one delivery job per delivery',
      );
      t.match(ev.eventId, /^evt_/);

      const before = receiver.requests.length;
      const outcome = await handler.run(handler.parse(ev.jobs[0]!.payload), ctx);
      t.match(outcome, { status: 'done', detail: { status_code: 200, attempts: 1 } });
      const req = receiver.requests[before]!;
      t.equal(req.method, 'POST');
      t.equal(req.headers['content-type'], 'application/json');
      t.equal(req.headers['webhook-id'], ev.eventId, 'the webhook-id is the event id');
      t.match(req.headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
      const verified = new Webhook(all.secret).verify(req.body, req.headers as Record<string, string>);
      t.match(verified, {
        id: ev.eventId,
        type: 'conversation.ended',
        data: { conversation_id: 'conv_a', project_id: server.projectId, ended_by: 'user' },
      });
      t.throws(
        () => new Webhook(failedOnly.secret).verify(req.body, req.headers as Record<string, string>),
        'another secret does not verify it',
      );
      t.throws(
        () =>
          new Webhook(all.secret).verify(req.body.replace('conv_a', 'conv_b'), req.headers as Record<string, string>),
        'a changed body does not verify',
      );
      t.match(await delivery(server, ev.deliveryIds[0]!), {
        status: 'succeeded',
        attempts: 1,
        response_status_code: 200,
        error: null,
      });

      const failed = await raise(server, 'conversation.failed', 'conv_a');
      t.equal(failed.deliveryIds.length, 2, 'conversation.failed goes to both endpoints');
    });

    t.test('a failed attempt is logged and retried with the same id and body; a 2xx ends it', async (t) => {
      await server.sql`delete from webhook_endpoints`;
      const ep = await endpoint(server, receiver.url);
      const ev = await raise(server, 'conversation.analyzed');
      const payload = handler.parse(ev.jobs[0]!.payload);
      const before = receiver.requests.length;
      receiver.script({ status: 503, body: 'busy, try later' }, { status: 204 });
      await t.rejects(handler.run(payload, ctx), WebhookDeliveryError, 'a 503 throws, so the queue retries');
      t.match(await delivery(server, ev.deliveryIds[0]!), {
        status: 'pending',
        attempts: 1,
        response_status_code: 503,
        error: 'HTTP 503: busy, try later',
        delivered_at: null,
      });
      t.match(await handler.run(payload, ctx), { status: 'done' });
      const row = await delivery(server, ev.deliveryIds[0]!);
      t.match(row, { status: 'succeeded', attempts: 2, response_status_code: 204, error: null });
      t.ok(row.delivered_at instanceof Date);
      const [first, second] = receiver.requests.slice(before);
      t.equal(first!.headers['webhook-id'], second!.headers['webhook-id'], 'the same webhook-id on every attempt');
      t.equal(first!.body, second!.body, 'the same body on every attempt');
      t.ok(new Webhook(ep.secret).verify(second!.body, second!.headers as Record<string, string>));
      t.match(
        await handler.run(payload, ctx),
        { status: 'done', detail: { already_delivered: true } },
        'a delivered delivery is not sent again',
      );
      t.equal(receiver.requests.length, before + 2);
    });

    t.test('the last attempt marks the delivery failed; timeouts and refused connections are attempts', async (t) => {
      await server.sql`delete from webhook_endpoints`;
      await endpoint(server, receiver.url);
      const ev = await raise(server, 'conversation.ended');
      const payload = handler.parse(ev.jobs[0]!.payload);
      receiver.script({ status: 500, body: 'boom' }, { hang: true });
      await t.rejects(handler.run(payload, ctx), /HTTP 500: boom/);
      await t.rejects(handler.run(payload, ctx), /no answer within 300 ms/);
      t.match(await delivery(server, ev.deliveryIds[0]!), {
        status: 'pending',
        attempts: 2,
        response_status_code: null,
        error: 'no answer within 300 ms',
      });
      // The endpoint goes away: the connection is refused.
      await receiver.close();
      await t.rejects(handler.run(payload, ctx), WebhookDeliveryError);
      const row = await delivery(server, ev.deliveryIds[0]!);
      t.match(row, { status: 'failed', attempts: 3 }, 'the third of three attempts marks it failed');
      t.match(row.error, /fetch failed/);
      t.match(await handler.run(payload, ctx), { status: 'skipped', reason: /gave up after 3 attempts/ });
      receiver = await startReceiver();
    });

    t.test('a node stopping mid-attempt does not count it; a deleted endpoint skips the job', async (t) => {
      await server.sql`delete from webhook_endpoints`;
      const ep = await endpoint(server, receiver.url);
      const ev = await raise(server, 'conversation.ended');
      const payload = handler.parse(ev.jobs[0]!.payload);
      const stop = new AbortController();
      receiver.script({ hang: true });
      const running = handler.run(payload, jobContext(server.sql, server.settings, { signal: stop.signal }));
      while (receiver.requests.length === 0 || receiver.requests.at(-1)!.headers['webhook-id'] !== ev.eventId)
        await new Promise((r) => setTimeout(r, 10));
      stop.abort(new Error('node stopping'));
      await t.rejects(running, /node stopping|aborted/);
      t.match(await delivery(server, ev.deliveryIds[0]!), { status: 'pending', attempts: 0 }, 'no attempt logged');
      await deleteWebhookEndpoint(server.sql, ep.id);
      t.match(await handler.run(payload, ctx), { status: 'skipped', reason: /deleted/ });
      t.throws(() => handler.parse({}), 'a bad payload is refused');
    });

    t.test('an event raised in a transaction that rolls back leaves no delivery', async (t) => {
      await server.sql`delete from webhook_endpoints`;
      await endpoint(server, receiver.url);
      const jobs: Job[] = [];
      await t.rejects(
        transaction(server.sql, async (tx) => {
          await enqueueWebhookEvent(
            tx,
            { type: 'conversation.ended', projectId: server.projectId, conversationId: 'conv_tx' },
            async (_db, kind, payload) => void jobs.push({ kind, payload }),
          );
          throw new Error('the conversation could not be finished');
        }),
        /could not be finished/,
      );
      t.equal(jobs.length, 1, 'the job was enqueued on the same transaction');
      t.same(
        await server.sql`select id from webhook_deliveries where conversation_id = 'conv_tx'`,
        [],
        'and rolled back with it',
      );
    });
  });
}
