// The credential cache: a verified key costs no query while it is cached; what revokes it (deletion, rotation,
// an allowlist change) takes effect at once on this node, through HTTP and through forget*; a change made by
// another process reaches a PostgreSQL node by NOTIFY; a lookup that raced a change is not cached; session
// tokens are never believed past expires_at.
import postgres from 'postgres';
import t from 'tap';
import { lookupCredential } from '../../src/auth/authenticate.js';
import { CredentialCache } from '../../src/auth/credential-cache.js';
import type { Sql } from '../../src/store/db.js';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

// Real databases (and a PGlite template made on first use) under a parallel suite: more than tap's default.
t.setTimeout(300_000);

/** Counts the queries `sql` runs (the cache only uses tagged-template queries). */
function counting(sql: Sql): { sql: Sql; queries: () => number } {
  let n = 0;
  const wrapped = ((strings: TemplateStringsArray, ...values: unknown[]) => {
    n++;
    return (sql as unknown as (s: TemplateStringsArray, ...v: unknown[]) => unknown)(strings, ...values);
  }) as unknown as Sql;
  return { sql: wrapped, queries: () => n };
}

/** A notification from another connection arrives within this (asynchronously). */
const NOTIFIED_WITHIN_MS = 5_000;

/** A day: longer than any test, so only a forget or a notification can end an entry. */
const NO_TTL = 86_400_000;

t.test('a lookup that raced a forget answers but is not cached', async (t) => {
  let release: (rows: unknown[]) => void = () => {};
  let queries = 0;
  const row = { id: 'api_key_1', org_id: 'org_1', ip_allowlist: [] };
  const fake = ((/* strings, ...values */) => {
    queries++;
    return queries === 1 ? new Promise((r) => (release = r)) : Promise.resolve([row]);
  }) as unknown as Sql;
  const cache = new CredentialCache(fake, { ttlMs: NO_TTL });
  const pending = cache.lookup('pk_secret', new Date());
  cache.forgetApiKey('api_key_1');
  release([row]);
  t.match(await pending, { auth: { kind: 'api_key', apiKeyId: 'api_key_1' } });
  await cache.lookup('pk_secret', new Date());
  t.equal(queries, 2, 'the raced result was not cached');
  await cache.lookup('pk_secret', new Date());
  t.equal(queries, 2, 'the second lookup was');
});

t.test('notification payloads forget what they name; an unknown payload forgets everything', async (t) => {
  let queries = 0;
  const rows: Record<string, unknown> = {
    key: { id: 'api_key_1', org_id: 'org_1', ip_allowlist: [] },
    token: {
      id: 'st_id_1',
      org_id: 'org_2',
      api_key_id: 'api_key_9',
      conversation_ids: null,
      expires_at: new Date(Date.now() + 60_000),
      ip_allowlist: [],
    },
  };
  const fake = ((strings: TemplateStringsArray) => {
    queries++;
    return Promise.resolve([strings.join('').includes('session_tokens') ? rows.token : rows.key]);
  }) as unknown as Sql;
  const cache = new CredentialCache(fake, { ttlMs: NO_TTL });
  const both = async () => {
    await cache.lookup('pk_a', new Date());
    await cache.lookup('st_b', new Date());
  };
  await both();
  t.equal(queries, 2);
  cache.applyNotification('workspace:org_3');
  await both();
  t.equal(queries, 2, 'another workspace: nothing forgotten');
  cache.applyNotification('workspace:org_2');
  await both();
  t.equal(queries, 3, 'the token of workspace org_2 was forgotten');
  cache.applyNotification('api_key:api_key_9');
  await both();
  t.equal(queries, 4, 'a session token goes with the key that minted it');
  cache.applyNotification('session_token:st_id_1');
  await both();
  t.equal(queries, 5);
  cache.applyNotification('api_key:api_key_1');
  await both();
  t.equal(queries, 6);
  cache.applyNotification('something new');
  await both();
  t.equal(queries, 8, 'an unknown payload forgets everything');
  const cached = await cache.lookup('pk_a', new Date());
  t.ok(Object.isFrozen(cached) && Object.isFrozen(cached!.auth), 'a shared credential cannot be changed by a request');
});

for (const db of DB_KINDS) {
  t.test(`credential cache on ${db}`, { timeout: 200_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);

    t.test('a verified key costs one query until it expires or is forgotten', async (t) => {
      const { sql, queries } = counting(server.sql);
      const cache = new CredentialCache(sql, { ttlMs: NO_TTL });
      for (let i = 0; i < 5; i++)
        t.match(await cache.lookup(server.apiKey, new Date()), { auth: { kind: 'api_key', orgId: server.orgId } });
      t.equal(queries(), 1);
      t.equal(await cache.lookup('pk_unknown', new Date()), null);
      t.equal(await cache.lookup('pk_unknown', new Date()), null);
      t.equal(queries(), 3, 'unknown secrets are not cached');
      cache.forgetWorkspace(server.orgId);
      await cache.lookup(server.apiKey, new Date());
      t.equal(queries(), 4);
      const stale = new CredentialCache(sql, { ttlMs: 0 });
      await stale.lookup(server.apiKey, new Date());
      await stale.lookup(server.apiKey, new Date());
      t.equal(queries(), 6, 'an entry past its time is looked up again');
    });

    t.test('a cached session token is refused once the clock passes its expires_at', async (t) => {
      const { body } = await client.post('/v1/auth/session_token', { ttl_seconds: 60 });
      const { sql, queries } = counting(server.sql);
      const cache = new CredentialCache(sql, { ttlMs: NO_TTL });
      t.match(await cache.lookup(body.session_token, new Date()), { auth: { kind: 'session_token' } });
      t.ok(await cache.lookup(body.session_token, new Date()));
      t.equal(queries(), 1);
      t.equal(await cache.lookup(body.session_token, new Date(Date.parse(body.expires_at) + 1)), null);
    });

    t.test('a key in use stops working at once when rotated or deleted (HTTP)', async (t) => {
      for (const action of ['rotate', 'delete'] as const) {
        const created = await client.post('/v1/api_keys', { name: `in-use-${action}` });
        const secret: string = created.body.api_key;
        t.equal((await client.get('/v1/projects', undefined, { key: secret })).status, 200);
        t.equal((await client.get('/v1/projects', undefined, { key: secret })).status, 200, 'served from the cache');
        const done =
          action === 'rotate'
            ? await client.post(`/v1/api_keys/${created.body.id}/rotate`)
            : await client.delete(`/v1/api_keys/${created.body.id}`);
        t.equal(done.status, 200);
        t.equal(
          (await client.get('/v1/projects', undefined, { key: secret })).status,
          401,
          `${action}: refused at once`,
        );
      }
    });

    t.test('session tokens minted by a deleted key stop working at once (HTTP)', async (t) => {
      const created = await client.post('/v1/api_keys', { name: 'minter' });
      const minted = await client.post('/v1/auth/session_token', {}, { key: created.body.api_key });
      t.equal(minted.status, 200);
      // A route session tokens may call, so the token is cached as valid.
      const token: string = minted.body.session_token;
      t.match(await server.ctx.credentials.lookup(token, new Date()), { auth: { kind: 'session_token' } });
      t.equal((await client.delete(`/v1/api_keys/${created.body.id}`)).status, 200);
      t.equal(await server.ctx.credentials.lookup(token, new Date()), null);
    });

    t.test('an allowlist change applies from the next request (HTTP)', async (t) => {
      t.equal((await client.get('/v1/projects')).status, 200);
      t.equal((await client.patch('/v1/workspace', { ip_allowlist: ['203.0.113.0/24'] })).status, 200);
      t.equal((await client.get('/v1/projects')).status, 403);
      // The allowlist now refuses this client: clear it behind the API (as the admin command would) and forget.
      await server.sql`update organizations set ip_allowlist = '[]'::jsonb where id = ${server.orgId}`;
      server.ctx.credentials.forgetWorkspace(server.orgId);
      t.equal((await client.get('/v1/projects')).status, 200);
    });

    if (db === 'postgres') {
      t.test('changes by another process arrive by NOTIFY', async (t) => {
        const other = postgres(server.settings.DATABASE_URL!, { max: 1, onnotice: () => {} });
        t.teardown(() => other.end());
        const cache = new CredentialCache(server.sql, { ttlMs: NO_TTL });
        await cache.listen();
        const created = await client.post('/v1/api_keys', { name: 'elsewhere' });
        const secret: string = created.body.api_key;
        t.ok(await cache.lookup(secret, new Date()));
        await other`delete from api_keys where id = ${created.body.id}`;
        await until(async () => (await cache.lookup(secret, new Date())) === null, {
          what: 'the deleted key forgotten',
          timeoutMs: NOTIFIED_WITHIN_MS,
        });
        t.equal(await cache.lookup(secret, new Date()), null, 'deleted elsewhere: forgotten');

        t.ok(await cache.lookup(server.apiKey, new Date()));
        await other`update organizations set ip_allowlist = '["198.51.100.7"]'::jsonb where id = ${server.orgId}`;
        const allowlist = async () => (await cache.lookup(server.apiKey, new Date()))?.ipAllowlist;
        await until(async () => (await allowlist())?.[0] === '198.51.100.7', {
          what: 'the changed allowlist',
          timeoutMs: NOTIFIED_WITHIN_MS,
        });
        t.same(await allowlist(), ['198.51.100.7'], 'allowlist changed elsewhere: looked up again');
        await other`update organizations set ip_allowlist = '[]'::jsonb where id = ${server.orgId}`;
        t.same(await lookupCredential(server.sql, server.apiKey, new Date()).then((c) => c?.ipAllowlist), []);
      });
    }
  });
}
