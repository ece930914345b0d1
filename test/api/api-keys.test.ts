// API keys over real HTTP: create (secret shown once), list (no secrets), update, delete, rotate
// (the old secret stops working at once), on both databases.
import t from 'tap';
import { api, createWorkspace, DB_KINDS, startTestServer } from '../helpers/server.js';

// Real databases (and a PGlite template made on first use) under a parallel suite: more than tap's default.
t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`api keys on ${db}`, { timeout: 120_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);

    t.test('create shows the secret once; it authenticates; list never shows it; stored only hashed', async (t) => {
      const created = await client.post('/v1/api_keys', { name: 'ci' });
      t.equal(created.status, 201);
      t.match(created.body, { id: /^api_key_[0-9a-f-]{36}$/, name: 'ci', api_key: /^pk_[A-Za-z0-9_-]{43}$/ });
      const secret: string = created.body.api_key;
      t.equal((await client.get('/v1/projects', undefined, { key: secret })).status, 200);
      const list = await client.get('/v1/api_keys');
      t.equal(list.status, 200);
      t.equal(list.body.api_keys.length, 2);
      const mine = list.body.api_keys.find((k: { id: string }) => k.id === created.body.id);
      t.match(mine, { name: 'ci', key_hint: secret.slice(-4), rotated_at: null });
      t.notOk(JSON.stringify(list.body).includes(secret), 'no secret in the listing');
      const rows = await server.sql`select * from api_keys where id = ${created.body.id}`;
      t.notOk(JSON.stringify(rows).includes(secret), 'no secret in the database');
    });

    t.test('rotate returns a new secret and the old one fails at once', async (t) => {
      const created = await client.post('/v1/api_keys', { name: 'rotating' });
      const old: string = created.body.api_key;
      const rotated = await client.post(`/v1/api_keys/${created.body.id}/rotate`);
      t.equal(rotated.status, 200);
      t.match(rotated.body, { id: created.body.id, name: 'rotating', api_key: /^pk_/ });
      t.not(rotated.body.api_key, old);
      const withOld = await client.get('/v1/projects', undefined, { key: old });
      t.equal(withOld.status, 401);
      t.equal((await client.get('/v1/projects', undefined, { key: rotated.body.api_key })).status, 200);
      const missing = await client.post('/v1/api_keys/api_key_00000000-0000-0000-0000-000000000000/rotate');
      t.equal(missing.status, 404);
      t.type(missing.body.error.message, 'string');
      t.equal((await client.post(`/v1/api_keys/${created.body.id}/rotate`, undefined, { key: null })).status, 401);
    });

    t.test('update and delete; the deleted key stops working; the last key stays', async (t) => {
      const created = await client.post('/v1/api_keys', { name: 'temp' });
      t.same((await client.patch(`/v1/api_keys/${created.body.id}`, { name: 'renamed' })).body, { success: true });
      const list = await client.get('/v1/api_keys');
      t.ok(
        list.body.api_keys.some((k: { id: string; name: string }) => k.id === created.body.id && k.name === 'renamed'),
      );
      const badName = await client.patch(`/v1/api_keys/${created.body.id}`, { name: '' });
      t.equal(badName.status, 400);
      t.ok(badName.body.param_errors.name);
      t.same((await client.delete(`/v1/api_keys/${created.body.id}`)).body, { success: true });
      t.equal((await client.get('/v1/projects', undefined, { key: created.body.api_key })).status, 401);
      t.equal((await client.delete(`/v1/api_keys/${created.body.id}`)).status, 404);

      const lonely = await createWorkspace(server.sql, `lonely-${db}`);
      const theirs = api({ url: server.url, apiKey: lonely.apiKey });
      const [only] = (await theirs.get('/v1/api_keys')).body.api_keys;
      const last = await theirs.delete(`/v1/api_keys/${only.id}`);
      t.equal(last.status, 409);
      t.equal((await theirs.get('/v1/projects')).status, 200);
    });

    t.test('deleting every key at once still leaves one', async (t) => {
      const ws = await createWorkspace(server.sql, `race-${db}`);
      const theirs = api({ url: server.url, apiKey: ws.apiKey });
      for (let i = 0; i < 3; i++) await theirs.post('/v1/api_keys', { name: `k${i}` });
      const keys = (await theirs.get('/v1/api_keys')).body.api_keys as { id: string }[];
      t.equal(keys.length, 4);
      // Each request authenticates with a key being deleted, so a late one may meet 401; none may leave zero keys.
      const results = await Promise.all(keys.map((k) => theirs.delete(`/v1/api_keys/${k.id}`)));
      const statuses = results.map((r) => r.status);
      t.ok(
        statuses.every((s) => s === 200 || s === 401 || s === 409),
        statuses.join(','),
      );
      const [{ n }] = await server.sql<
        { n: number }[]
      >`select count(*)::int as n from api_keys where org_id = ${ws.orgId}`;
      t.ok(n >= 1, `${n} keys remain`);
      t.equal(n, keys.length - statuses.filter((s) => s === 200).length);
    });

    t.test("another workspace's key: 403 on rotate, update and delete", async (t) => {
      const other = await createWorkspace(server.sql, `other-${db}`);
      const [theirKey] = (await api({ url: server.url, apiKey: other.apiKey }).get('/v1/api_keys')).body.api_keys;
      t.equal((await client.post(`/v1/api_keys/${theirKey.id}/rotate`)).status, 403);
      t.equal((await client.patch(`/v1/api_keys/${theirKey.id}`, { name: 'x' })).status, 403);
      t.equal((await client.delete(`/v1/api_keys/${theirKey.id}`)).status, 403);
      t.equal(
        (await client.get('/v1/projects', undefined, { key: other.apiKey })).status,
        200,
        'their key still works',
      );
    });
  });
}
