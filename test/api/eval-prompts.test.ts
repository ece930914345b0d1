// Eval prompts over real HTTP (201 {id}; 400, 401, 403, 404) and their listing, on both databases.
import t from 'tap';
import { api, createWorkspace, DB_KINDS, startTestServer } from '../helpers/server.js';

// Real databases (and a PGlite template made on first use) under a parallel suite: more than tap's default.
t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`eval prompts on ${db}`, { timeout: 120_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);
    const path = `/v1/projects/${server.projectId}/conversation_eval_prompts`;

    const created = await client.post(path, { name: 'politeness', prompt: 'Was the agent polite?' });
    t.equal(created.status, 201);
    t.match(created.body, { id: /^conv_eval_prompt_[0-9a-f-]{36}$/ });
    t.same(Object.keys(created.body), ['id']);
    const list = await client.get(path);
    t.equal(list.status, 200);
    t.match(list.body.conversation_eval_prompts, [
      { id: created.body.id, name: 'politeness', prompt: 'Was the agent polite?' },
    ]);

    for (const [payload, param] of [
      [{ prompt: 'x' }, 'name'],
      [{ name: 'x' }, 'prompt'],
      [{ name: 'x', prompt: 7 }, 'prompt'],
    ] as const) {
      const res = await client.post(path, payload);
      t.equal(res.status, 400);
      t.ok(res.body.param_errors[param], param);
    }
    t.equal((await client.post(path, { name: 'a', prompt: 'b' }, { key: null })).status, 401);
    const missing = await client.post(
      '/v1/projects/proj_00000000-0000-0000-0000-000000000000/conversation_eval_prompts',
      { name: 'a', prompt: 'b' },
    );
    t.equal(missing.status, 404);
    const other = await createWorkspace(server.sql, `other-${db}`);
    const foreign = await client.post(`/v1/projects/${other.projectId}/conversation_eval_prompts`, {
      name: 'a',
      prompt: 'b',
    });
    t.equal(foreign.status, 403);
    t.same(
      (
        await api({ url: server.url, apiKey: other.apiKey }).get(
          `/v1/projects/${other.projectId}/conversation_eval_prompts`,
        )
      ).body,
      { conversation_eval_prompts: [] },
    );
  });
}
