// Extraction schemas over real HTTP: create, list, get by name or id, update, delete; field
// rules (type enum, description present, unique names); name conflicts; isolation; on both databases.
import t from 'tap';
import { api, createWorkspace, DB_KINDS, startTestServer } from '../helpers/server.js';

// Real databases (and a PGlite template made on first use) under a parallel suite: more than tap's default.
t.setTimeout(300_000);

const fields = [
  { name: 'order_id', type: 'string', description: 'the order the caller asks about' },
  { name: 'items', type: 'int[]', description: null },
];

for (const db of DB_KINDS) {
  t.test(`extraction schemas on ${db}`, { timeout: 120_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);

    t.test('create, get by name and id, list, update, delete', async (t) => {
      const created = await client.post('/v1/extraction_schemas', {
        name: 'orders',
        prompt: 'Extract the order.',
        fields,
      });
      t.equal(created.status, 201);
      t.match(created.body, { id: /^conv_extract_schema_[0-9a-f-]{36}$/, name: 'orders' });
      const expected = { id: created.body.id, name: 'orders', prompt: 'Extract the order.', fields };
      t.same((await client.get('/v1/extraction_schemas/orders')).body, { extraction_schema: expected });
      t.same((await client.get(`/v1/extraction_schemas/${created.body.id}`)).body, { extraction_schema: expected });
      t.same((await client.get('/v1/extraction_schemas?project=main')).body, { extraction_schemas: [expected] });
      t.equal((await client.get('/v1/extraction_schemas/nope')).status, 404);
      t.equal((await client.get('/v1/extraction_schemas/orders?project=nope')).status, 404);

      const dup = await client.post('/v1/extraction_schemas', { name: 'orders', prompt: 'x', fields });
      t.equal(dup.status, 409);
      t.ok(dup.body.param_errors.name);

      const upd = await client.patch('/v1/extraction_schemas/orders', { prompt: 'New prompt.', fields: [fields[0]] });
      t.same(upd.body, { success: true });
      t.same((await client.get('/v1/extraction_schemas/orders')).body.extraction_schema, {
        ...expected,
        prompt: 'New prompt.',
        fields: [fields[0]],
      });

      t.same((await client.delete('/v1/extraction_schemas/orders')).body, { success: true });
      t.equal((await client.get('/v1/extraction_schemas/orders')).status, 404);
      t.same((await client.get('/v1/extraction_schemas')).body, { extraction_schemas: [] });
      const again = await client.post('/v1/extraction_schemas', { name: 'orders', prompt: 'x', fields });
      t.equal(again.status, 201, 'the name of a deleted schema is free again');
    });

    t.test('validation', async (t) => {
      const cases: [unknown, string][] = [
        [{ prompt: 'p', fields }, 'name'],
        [{ name: 'a', fields }, 'prompt'],
        [{ name: 'a', prompt: 'p', fields: [] }, 'fields'],
        [{ name: 'a', prompt: 'p', fields: [{ name: 'x', type: 'date', description: null }] }, 'fields.0.type'],
        [{ name: 'a', prompt: 'p', fields: [{ name: 'x', type: 'string' }] }, 'fields.0.description'],
        [{ name: 'a', prompt: 'p', fields: [{ name: '1x', type: 'string', description: null }] }, 'fields.0.name'],
        [{ name: 'a', prompt: 'p', fields: [fields[0], fields[0]] }, 'fields.1.name'],
      ];
      for (const [payload, param] of cases) {
        const res = await client.post('/v1/extraction_schemas', payload);
        t.equal(res.status, 400, JSON.stringify(payload));
        t.ok(res.body.param_errors?.[param], `${param} in ${JSON.stringify(res.body)}`);
      }
      const created = await client.post('/v1/extraction_schemas', { name: 'b', prompt: 'p', fields });
      t.equal(created.status, 201);
      const bad = await client.patch('/v1/extraction_schemas/b', {
        fields: [{ name: 'x', type: 'bool[]', description: 3 }],
      });
      t.equal(bad.status, 400);
      t.ok(bad.body.param_errors['fields.0.description']);
    });

    t.test("another workspace's schema: 403 by id", async (t) => {
      const other = await createWorkspace(server.sql, `other-${db}`);
      const theirs = await api({ url: server.url, apiKey: other.apiKey }).post('/v1/extraction_schemas', {
        name: 'x',
        prompt: 'p',
        fields,
      });
      t.equal((await client.get(`/v1/extraction_schemas/${theirs.body.id}`)).status, 403);
      t.equal((await client.delete(`/v1/extraction_schemas/${theirs.body.id}`)).status, 403);
      t.equal((await client.get('/v1/extraction_schemas/x')).status, 404, 'names resolve in the caller’s own project');
    });
  });
}
