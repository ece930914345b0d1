// Projects over real HTTP (create/update/delete), on both databases.
import t from 'tap';
import { api, createWorkspace, DB_KINDS, startTestServer } from '../helpers/server.js';

// Real databases (and a PGlite template made on first use) under a parallel suite: more than tap's default.
t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`projects on ${db}`, { timeout: 120_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);

    t.test('lists the bootstrap main project with the bootstrap key', async (t) => {
      const res = await client.get('/v1/projects');
      t.equal(res.status, 200);
      t.same(res.body, {
        projects: [
          {
            id: server.projectId,
            name: 'main',
            default_agent: null,
            active_conversations: 0,
            max_active_conversations: null,
          },
        ],
      });
      t.match(server.projectId, /^proj_[0-9a-f-]{36}$/);
    });

    t.test('401 without a key, with an unknown key, and with another scheme', async (t) => {
      for (const opts of [
        { key: null },
        { key: 'pk_not-a-real-key' },
        { key: null, headers: { authorization: `Basic ${server.apiKey}` } },
      ]) {
        const res = await client.get('/v1/projects', undefined, opts);
        t.equal(res.status, 401);
        t.equal(res.body.error.code, 'unauthorized');
        t.type(res.body.error.message, 'string');
      }
    });

    t.test('get by name and by id; 404 for an unknown one', async (t) => {
      const byName = await client.get('/v1/projects/main');
      t.equal(byName.status, 200);
      t.equal(byName.body.project.id, server.projectId);
      const byId = await client.get(`/v1/projects/${server.projectId}`);
      t.same(byId.body, byName.body);
      const missing = await client.get('/v1/projects/nope');
      t.equal(missing.status, 404);
      t.match(missing.body, { error: { message: /nope/ } });
    });

    t.test('create, update, conflict, delete', async (t) => {
      const created = await client.post('/v1/projects', { name: 'sales', max_active_conversations: 5 });
      t.equal(created.status, 201);
      t.match(created.body.project, {
        name: 'sales',
        max_active_conversations: 5,
        default_agent: null,
        active_conversations: 0,
      });
      const dup = await client.post('/v1/projects', { name: 'sales' });
      t.equal(dup.status, 409);
      t.same(dup.body.param_errors, { name: "a project named 'sales' already exists" });
      const bad = await client.post('/v1/projects', { name: 'Bad Name' });
      t.equal(bad.status, 400);
      t.ok(bad.body.param_errors.name);
      const upd = await client.patch('/v1/projects/sales', { max_active_conversations: null, name: 'support' });
      t.same(upd.body, { success: true });
      const got = await client.get(`/v1/projects/${created.body.project.id}`);
      t.match(got.body.project, { name: 'support', max_active_conversations: null });
      const delMain = await client.delete('/v1/projects/main');
      t.equal(delMain.status, 409);
      const del = await client.delete('/v1/projects/support');
      t.same(del.body, { success: true });
      t.equal((await client.get('/v1/projects/support')).status, 404);
    });

    t.test('default_agent names an agent of the project; active_conversations counts live leases', async (t) => {
      const upserted = await client.put('/v1/agents/upsert', { name: 'front-desk', system_prompt: 'Greet callers.' });
      t.equal(upserted.status, 200);
      const agent = upserted.body.agent;
      t.same((await client.patch('/v1/projects/main', { default_agent: 'front-desk' })).body, { success: true });
      t.same((await client.get('/v1/projects/main')).body.project.default_agent, { id: agent.id, name: 'front-desk' });
      const unknown = await client.patch('/v1/projects/main', { default_agent: 'nobody' });
      t.equal(unknown.status, 400);
      t.ok(unknown.body.param_errors.default_agent);
      t.same(
        (await client.patch('/v1/projects/main', { default_agent: agent.id })).body,
        { success: true },
        'by id too',
      );

      await server.sql`insert into conversation_leases (conversation_id, project_id, node_id, expires_at) values
        ('conv_live_1', ${server.projectId}, 'node-a', now() + interval '1 minute'),
        ('conv_live_2', ${server.projectId}, 'node-b', now() + interval '1 minute'),
        ('conv_dead_1', ${server.projectId}, 'node-c', now() - interval '1 second')`;
      const got = (await client.get('/v1/projects/main')).body.project;
      t.equal(got.active_conversations, 2, 'expired leases (dead nodes) are not counted');
      t.same((await client.patch('/v1/projects/main', { default_agent: null })).body, { success: true });
      t.equal((await client.get('/v1/projects/main')).body.project.default_agent, null);
      await server.sql`delete from conversation_leases`;
    });

    t.test("another workspace's project answers 403 by id and is not listed", async (t) => {
      const other = await createWorkspace(server.sql, `other-${db}`);
      const res = await client.get(`/v1/projects/${other.projectId}`);
      t.equal(res.status, 403);
      const list = await client.get('/v1/projects');
      t.notOk(list.body.projects.some((p: { id: string }) => p.id === other.projectId));
      const theirs = await api({ url: server.url, apiKey: other.apiKey }).get('/v1/projects');
      t.same(
        theirs.body.projects.map((p: { id: string }) => p.id),
        [other.projectId],
      );
    });
  });
}
