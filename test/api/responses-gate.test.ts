// POST /v1/responses gating and limits over real HTTP, on both databases: 404 without a chat model (saying how
// to enable it), the per-workspace flag over PARLEY_RESPONSES_ENABLED, 429 from the shared token bucket,
// web_search without a search endpoint, 401/403.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { hashSecret, newSessionTokenSecret } from '../../src/auth/secrets.js';
import { setWorkspaceFlag } from '../../src/responses/gate.js';
import { takeToken } from '../../src/store/rate-limits.js';
import { startFakeChatServer } from '../fakes/chat-server.js';
import { api, createWorkspace, DB_KINDS, startTestServer } from '../helpers/server.js';

t.setTimeout(400_000);

const body = { system_prompt: 'You help.', input: [{ role: 'user', text: 'Hi' }] };

const chat = await startFakeChatServer();
t.teardown(() => chat.close());
chat.fallback = { reply: { content: 'Hello there.' } };

for (const db of DB_KINDS) {
  t.test(`gating on ${db}`, { timeout: 380_000 }, async (t) => {
    t.test('without a chat model: 404 saying how to enable it, even for an invalid body', async (t) => {
      const server = await startTestServer({ db, env: { PARLEY_RESPONSES_ENABLED: '1' } });
      t.teardown(() => server.close());
      const client = api(server);
      for (const b of [body, { nonsense: true }]) {
        const res = await client.post('/v1/responses', b);
        t.equal(res.status, 404);
        t.equal(res.body.error.code, 'responses_not_enabled');
        t.match(res.body.error.message, /PARLEY_LLM_BASE_URL and PARLEY_LLM_MODEL/);
      }
      t.ok(await setWorkspaceFlag(server.sql, server.orgId, true));
      t.equal((await client.post('/v1/responses', body)).status, 404, 'the workspace flag does not replace the model');
    });

    t.test('the workspace flag overrides the server default; limits per workspace', async (t) => {
      const server = await startTestServer({
        db,
        env: {
          PARLEY_LLM_BASE_URL: chat.baseUrl,
          PARLEY_LLM_MODEL: 'fake-model',
          PARLEY_RESPONSES_ENABLED: '0',
          PARLEY_RESPONSES_RATE_PER_MIN: '1',
          PARLEY_RESPONSES_RATE_BURST: '2',
        },
      });
      t.teardown(() => server.close());
      const client = api(server);
      const other = await createWorkspace(server.sql, `other-${randomUUID()}`);
      const otherClient = api({ url: server.url, apiKey: other.apiKey });

      const off = await client.post('/v1/responses', body);
      t.equal(off.status, 404, 'off by server default');
      t.match(off.body.error.message, /not enabled for this workspace.*admin command/);

      t.ok(await setWorkspaceFlag(server.sql, server.orgId, true));
      const on = await client.post('/v1/responses', body);
      t.equal(on.status, 200);
      t.same(on.body, { responses: [{ text: 'Hello there.', tool_calls: [] }] });
      t.equal((await otherClient.post('/v1/responses', body)).status, 404, 'another workspace keeps the default');

      t.test('web_search without a search endpoint is a 400 naming the setting', async (t) => {
        const res = await client.post('/v1/responses', { ...body, tools: ['web_search'] });
        t.equal(res.status, 400);
        t.match(res.body, { param_errors: { 'tools.0': /PARLEY_WEB_SEARCH_URL/ } });
      });

      t.test('429 once the bucket is empty, with Retry-After; other workspaces are not affected', async (t) => {
        // Burst 2: the first 200 and the 400 above took both tokens.
        const limited = await client.post('/v1/responses', body);
        t.equal(limited.status, 429);
        t.equal(limited.body.error.code, 'rate_limit_exceeded');
        const retryAfter = Number(limited.headers.get('retry-after'));
        t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter} s within one refill period`);
        t.ok(await setWorkspaceFlag(server.sql, other.orgId, true));
        t.equal((await otherClient.post('/v1/responses', body)).status, 200);
      });

      t.test('the flag can be cleared back to the server default', async (t) => {
        t.ok(await setWorkspaceFlag(server.sql, other.orgId, null));
        t.equal((await otherClient.post('/v1/responses', body)).status, 404);
        t.notOk(await setWorkspaceFlag(server.sql, 'org_missing', true));
        await server.sql`update organizations set features = ${server.sql.json({ responses: 'yes' })} where id = ${other.orgId}`;
        t.equal(
          (await otherClient.post('/v1/responses', body)).status,
          404,
          'a flag that is not a boolean counts as unset',
        );
      });

      t.test('401 without credentials, 403 for a session token', async (t) => {
        t.equal((await client.post('/v1/responses', body, { key: null })).status, 401);
        const secret = newSessionTokenSecret();
        await server.sql`insert into session_tokens (id, org_id, token_hash, expires_at)
          values (${`st_${randomUUID()}`}, ${server.orgId}, ${hashSecret(secret)}, now() + interval '5 minutes')`;
        const res = await client.post('/v1/responses', body, { key: secret });
        t.equal(res.status, 403);
        t.match(res.body.error.message, /API key/);
      });

      t.test('the token bucket refills over time and is shared by every node on the database', async (t) => {
        const key = `test:${randomUUID()}`;
        // 1 token a minute: real time passing during the test refills nothing that matters.
        const rule = { perMinute: 1, burst: 3 };
        const takes = await Promise.all([1, 2, 3, 4, 5].map(() => takeToken(server.sql, key, rule)));
        t.equal(takes.filter((x) => x.allowed).length, 3, 'concurrent takes never exceed the burst');
        const denied = takes.find((x) => !x.allowed);
        t.ok(
          denied && !denied.allowed && denied.retryAfterSec >= 30 && denied.retryAfterSec <= 60,
          'Retry-After: about a minute to the next token',
        );
        // Age the bucket by two minutes of refill: two more takes pass, the third does not.
        await server.sql`update rate_limit_buckets set updated_at = updated_at - interval '2 minutes' where key = ${key}`;
        t.same(
          [
            (await takeToken(server.sql, key, rule)).allowed,
            (await takeToken(server.sql, key, rule)).allowed,
            (await takeToken(server.sql, key, rule)).allowed,
          ],
          [true, true, false],
        );
        // A long quiet period refills only up to the burst.
        await server.sql`update rate_limit_buckets set updated_at = updated_at - interval '1 hour' where key = ${key}`;
        const after = await Promise.all([1, 2, 3, 4].map(() => takeToken(server.sql, key, rule)));
        t.equal(after.filter((x) => x.allowed).length, 3);
      });
    });
  });
}
