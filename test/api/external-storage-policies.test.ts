// External storage policies over real HTTP: create, list, get, update (any subset; credentials
// rotate only when both are given; 409 name conflict with the validation body), delete; URL rules; isolation.
import t from 'tap';
import { api, createWorkspace, DB_KINDS, startTestServer } from '../helpers/server.js';

// Real databases (and a PGlite template made on first use) under a parallel suite: more than tap's default.
t.setTimeout(300_000);

const policy = {
  name: 'recordings_s3',
  endpoint_url: 'https://s3.eu-west-1.amazonaws.com',
  bucket: 'acme-recordings',
  region: 'eu-west-1',
  access_key_id: 'AKIAEXAMPLE',
  secret_access_key: 'secret-one',
};

for (const db of DB_KINDS) {
  t.test(`external storage policies on ${db}`, { timeout: 120_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);

    t.test('create, get, list, update, delete; the secret is never returned', async (t) => {
      const created = await client.post('/v1/external_storage_policies', policy);
      t.equal(created.status, 201);
      t.match(created.body, { id: /^ext_storage_policy_/, name: 'recordings_s3' });
      const got = await client.get('/v1/external_storage_policies/recordings_s3');
      t.equal(got.status, 200);
      t.match(got.body.external_storage_policy, {
        id: created.body.id,
        name: 'recordings_s3',
        endpoint_url: policy.endpoint_url,
        bucket: 'acme-recordings',
        region: 'eu-west-1',
        key_prefix: null,
        addressing_style: 'auto',
        access_key_id: 'AKIAEXAMPLE',
      });
      t.notOk(JSON.stringify(got.body).includes('secret-one'));
      t.same((await client.get(`/v1/external_storage_policies/${created.body.id}`)).body, got.body);
      t.equal((await client.get('/v1/external_storage_policies')).body.external_storage_policies.length, 1);

      t.same(
        (await client.patch('/v1/external_storage_policies/recordings_s3', { key_prefix: 'calls/', region: null }))
          .body,
        { success: true },
      );
      const [row1] = await server.sql`select * from external_storage_policies where id = ${created.body.id}`;
      t.match(row1, {
        key_prefix: 'calls/',
        region: null,
        access_key_id: 'AKIAEXAMPLE',
        secret_access_key: 'secret-one',
      });

      const half = await client.patch('/v1/external_storage_policies/recordings_s3', { access_key_id: 'AKIANEW' });
      t.equal(half.status, 400, 'one credential alone does not rotate');
      t.ok(half.body.param_errors.secret_access_key);
      t.same(
        (
          await client.patch('/v1/external_storage_policies/recordings_s3', {
            access_key_id: 'AKIANEW',
            secret_access_key: 'secret-two',
          })
        ).body,
        { success: true },
      );
      const [row2] = await server.sql`select * from external_storage_policies where id = ${created.body.id}`;
      t.match(row2, { access_key_id: 'AKIANEW', secret_access_key: 'secret-two' });

      t.same((await client.patch(`/v1/external_storage_policies/${created.body.id}`, { name: 'archive' })).body, {
        success: true,
      });
      t.equal((await client.get('/v1/external_storage_policies/recordings_s3')).status, 404);
      t.same((await client.delete('/v1/external_storage_policies/archive')).body, { success: true });
      t.equal((await client.get('/v1/external_storage_policies/archive')).status, 404);
      t.equal((await client.patch('/v1/external_storage_policies/archive', { bucket: 'abc' })).status, 404);
    });

    t.test('409 on a name that exists, with the validation-shaped body', async (t) => {
      await client.post('/v1/external_storage_policies', { ...policy, name: 'first' });
      await client.post('/v1/external_storage_policies', { ...policy, name: 'second' });
      const res = await client.patch('/v1/external_storage_policies/second', { name: 'first' });
      t.equal(res.status, 409);
      t.same(Object.keys(res.body).sort(), ['error', 'param_errors']);
      t.type(res.body.error.message, 'string');
      t.ok(res.body.param_errors.name);
      const dup = await client.post('/v1/external_storage_policies', { ...policy, name: 'first' });
      t.equal(dup.status, 409);
      t.ok(dup.body.param_errors.name);
    });

    t.test('validation: name, endpoint_url (public https, no credentials), bucket, addressing_style', async (t) => {
      const cases: [Record<string, unknown>, string][] = [
        [{ name: 'Bad-Name' }, 'name'],
        [{ name: '1abc' }, 'name'],
        [{ endpoint_url: 'http://s3.example.com' }, 'endpoint_url'],
        [{ endpoint_url: 'https://user:pw@s3.example.com' }, 'endpoint_url'],
        [{ endpoint_url: 'https://127.0.0.1:9000' }, 'endpoint_url'],
        [{ endpoint_url: 'https://10.1.2.3' }, 'endpoint_url'],
        [{ endpoint_url: 'https://[::1]/' }, 'endpoint_url'],
        [{ endpoint_url: 'https://169.254.169.254/' }, 'endpoint_url'],
        [{ endpoint_url: 'https://minio.local' }, 'endpoint_url'],
        [{ endpoint_url: 'https://localhost:9000' }, 'endpoint_url'],
        [{ bucket: 'AB' }, 'bucket'],
        [{ addressing_style: 'dns' }, 'addressing_style'],
      ];
      for (const [change, param] of cases) {
        const res = await client.post('/v1/external_storage_policies', { ...policy, name: 'v', ...change });
        t.equal(res.status, 400, JSON.stringify(change));
        t.ok(res.body.param_errors?.[param], `${param} in ${JSON.stringify(res.body)}`);
        const upd = await client.patch('/v1/external_storage_policies/first', change);
        t.equal(upd.status, 400, `update ${JSON.stringify(change)}`);
      }
      const { secret_access_key: _omit, ...noSecret } = policy;
      const missing = await client.post('/v1/external_storage_policies', { ...noSecret, name: 'v' });
      t.ok(missing.body.param_errors.secret_access_key);
    });

    t.test("another workspace's policy: 403 by id", async (t) => {
      const other = await createWorkspace(server.sql, `other-${db}`);
      const theirs = await api({ url: server.url, apiKey: other.apiKey }).post('/v1/external_storage_policies', policy);
      t.equal(theirs.status, 201);
      t.equal(
        (await client.patch(`/v1/external_storage_policies/${theirs.body.id}`, { bucket: 'mine-now' })).status,
        403,
      );
      t.equal((await client.get(`/v1/external_storage_policies/${theirs.body.id}`)).status, 403);
    });
  });
}

t.test('PARLEY_ALLOW_PRIVATE_ENDPOINTS=1 admits a local endpoint (development)', { timeout: 60_000 }, async (t) => {
  const server = await startTestServer({ db: 'postgres', env: { PARLEY_ALLOW_PRIVATE_ENDPOINTS: '1' } });
  t.teardown(() => server.close());
  const res = await api(server).post('/v1/external_storage_policies', {
    ...policy,
    endpoint_url: 'https://127.0.0.1:9000',
  });
  t.equal(res.status, 201);
  const insecure = await api(server).post('/v1/external_storage_policies', {
    ...policy,
    name: 'x',
    endpoint_url: 'http://127.0.0.1:9000',
  });
  t.equal(insecure.status, 400, 'still https only');
});
