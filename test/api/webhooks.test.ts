// Webhook endpoints over real HTTP: create (the secret shown once), list, delete, the URL rules of every outbound
// URL, the per-project bound, workspace isolation, and the delivery log with its pagination.
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { api, createWorkspace, DB_KINDS, startTestServer } from '../helpers/server.js';
import { enqueueWebhookEvent } from '../../src/jobs/webhooks/events.js';
import { webhookDeliveryHandler } from '../../src/jobs/webhooks/delivery.js';
import { WEBHOOK_MAX_ENDPOINTS } from '../../src/schemas/webhooks.js';
import { jobContext } from '../jobs/delivery-helpers.js';

t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`webhooks on ${db}`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);

    t.test('create shows the secret once; list and delete', async (t) => {
      const created = await client.post('/v1/webhooks', {
        url: 'https://hooks.example.com/parley',
        description: 'CRM',
      });
      t.equal(created.status, 201);
      t.match(created.body, {
        webhook: {
          id: /^webhook_/,
          url: 'https://hooks.example.com/parley',
          description: 'CRM',
          events: ['conversation.ended', 'conversation.analyzed', 'conversation.failed'],
        },
        secret: /^whsec_[A-Za-z0-9+/]{43}=$/,
      });
      const listed = await client.get('/v1/webhooks');
      t.equal(listed.status, 200);
      t.same(listed.body.webhooks, [created.body.webhook]);
      t.notOk(JSON.stringify(listed.body).includes(created.body.secret.slice(6)), 'the list never shows the secret');

      const only = await client.post('/v1/webhooks', {
        url: 'https://hooks.example.com/failures',
        events: ['conversation.failed', 'conversation.failed'],
      });
      t.same(only.body.webhook.events, ['conversation.failed'], 'events are deduplicated');
      t.not(only.body.secret, created.body.secret, 'each endpoint has its own secret');

      t.same((await client.delete(`/v1/webhooks/${created.body.webhook.id}`)).body, { success: true });
      t.equal((await client.delete(`/v1/webhooks/${created.body.webhook.id}`)).status, 404);
      t.same(
        (await client.get('/v1/webhooks')).body.webhooks.map((w: { id: string }) => w.id),
        [only.body.webhook.id],
      );
      await client.delete(`/v1/webhooks/${only.body.webhook.id}`);
    });

    t.test('endpoint URLs follow the outbound URL rules; events and fields are checked', async (t) => {
      const cases: [Record<string, unknown>, string][] = [
        [{ url: 'http://hooks.example.com/x' }, 'url'],
        [{ url: 'https://user:pw@hooks.example.com/x' }, 'url'],
        [{ url: 'https://127.0.0.1/x' }, 'url'],
        [{ url: 'https://10.0.0.7/x' }, 'url'],
        [{ url: 'https://169.254.169.254/latest' }, 'url'],
        [{ url: 'https://[::1]/x' }, 'url'],
        [{ url: 'https://crm.internal/x' }, 'url'],
        [{ url: 'not a url' }, 'url'],
        [{ url: 'https://hooks.example.com/x', events: ['conversation.started'] }, 'events.0'],
        [{ url: 'https://hooks.example.com/x', events: [] }, 'events'],
        [{ url: 'https://hooks.example.com/x', secret: 'whsec_mine' }, 'secret'],
      ];
      for (const [body, param] of cases) {
        const res = await client.post('/v1/webhooks', body);
        t.equal(res.status, 400, JSON.stringify(body));
        t.ok(
          res.body.param_errors?.[param],
          `${JSON.stringify(body)} names ${param}: ${JSON.stringify(res.body.param_errors)}`,
        );
      }
      t.same((await client.get('/v1/webhooks')).body.webhooks, [], 'nothing was created');
    });

    t.test(`a project has at most ${WEBHOOK_MAX_ENDPOINTS} endpoints; projects are separate`, async (t) => {
      // Created all at once: the bound holds under concurrency.
      const all = await Promise.all(
        Array.from({ length: WEBHOOK_MAX_ENDPOINTS + 5 }, (_, i) =>
          client.post('/v1/webhooks', { url: `https://hooks.example.com/${i}` }),
        ),
      );
      t.equal(all.filter((r) => r.status === 201).length, WEBHOOK_MAX_ENDPOINTS);
      const over = all.filter((r) => r.status !== 201);
      t.same(
        over.map((r) => [r.status, r.body.error.code]),
        Array(5).fill([409, 'limit_reached']),
      );
      t.equal((await client.post('/v1/projects', { name: 'second' })).status, 201);
      t.equal(
        (await client.post('/v1/webhooks?project=second', { url: 'https://hooks.example.com/second' })).status,
        201,
        'another project has its own bound',
      );
      t.equal((await client.get('/v1/webhooks?project=second')).body.webhooks.length, 1);
      t.equal((await client.get('/v1/webhooks?project=nope')).status, 404);
      await server.sql`delete from webhook_endpoints`;
    });

    t.test('another workspace cannot see, read the log of, or delete an endpoint', async (t) => {
      const mine = (await client.post('/v1/webhooks', { url: 'https://hooks.example.com/mine' })).body.webhook
        .id as string;
      const other = await createWorkspace(server.sql, 'other');
      const theirs = api({ url: server.url, apiKey: other.apiKey });
      t.same((await theirs.get('/v1/webhooks')).body.webhooks, []);
      t.equal((await theirs.delete(`/v1/webhooks/${mine}`)).status, 403);
      t.equal((await theirs.get(`/v1/webhooks/${mine}/deliveries`)).status, 403);
      t.equal((await client.get('/v1/webhooks/webhook_nope/deliveries')).status, 404);
      t.equal((await client.get('/v1/webhooks', undefined, { key: null })).status, 401);
      await server.sql`delete from webhook_endpoints`;
    });

    t.test('the delivery log: status, attempts, answer, error and times, newest first, paged', async (t) => {
      const created = (await client.post('/v1/webhooks', { url: 'https://hooks.example.com/log' })).body;
      const id = created.webhook.id as string;
      const jobs: { delivery_id: string }[] = [];
      const enqueue = async (_db: unknown, _kind: string, payload: unknown) =>
        void jobs.push(payload as { delivery_id: string });
      for (const conv of ['conv_1', 'conv_2', 'conv_3']) {
        await enqueueWebhookEvent(
          server.sql,
          { type: 'conversation.ended', projectId: server.projectId, conversationId: conv },
          enqueue,
        );
      }
      // The endpoint answers 503, then 200: the first delivery takes two attempts.
      const answers = [503, 200, 200, 200];
      const sent: Request[] = [];
      const fetchStub: typeof fetch = async (input, init) => {
        sent.push(new Request(input, init));
        const status = answers.shift()!;
        return new Response(status === 200 ? 'ok' : 'unavailable', { status });
      };
      const handler = webhookDeliveryHandler();
      const ctx = jobContext(server.sql, server.settings, { fetch: fetchStub });
      await t.rejects(handler.run(jobs[0]!, ctx));
      for (const job of jobs) await handler.run(job, ctx);
      t.equal(sent.length, 4);
      t.equal(sent[0]!.url, 'https://hooks.example.com/log');
      const body = await sent[0]!.text();
      t.ok(
        new Webhook(created.secret).verify(body, Object.fromEntries(sent[0]!.headers)),
        'signed with the secret shown at creation',
      );

      const page1 = await client.get(`/v1/webhooks/${id}/deliveries?limit=2`);
      t.equal(page1.status, 200);
      t.same(
        page1.body.deliveries.map((d: { conversation_id: string }) => d.conversation_id),
        ['conv_3', 'conv_2'],
        'newest first',
      );
      t.ok(page1.body.pagination.next_cursor);
      const page2 = await client.get(
        `/v1/webhooks/${id}/deliveries?limit=2&after=${page1.body.pagination.next_cursor}`,
      );
      t.equal(page2.body.pagination.next_cursor, null);
      const first = page2.body.deliveries[0];
      t.match(first, {
        id: /^whdel_/,
        event_id: /^evt_/,
        event_type: 'conversation.ended',
        conversation_id: 'conv_1',
        status: 'succeeded',
        attempts: 2,
        response_status_code: 200,
        error: null,
        created_at: String,
        last_attempt_at: String,
        delivered_at: String,
      });
      t.equal((await client.get(`/v1/webhooks/${id}/deliveries?limit=0`)).status, 400);
      t.same((await client.delete(`/v1/webhooks/${id}`)).body, { success: true });
      t.equal((await client.get(`/v1/webhooks/${id}/deliveries`)).status, 404, 'the log goes with its endpoint');
    });
  });
}
