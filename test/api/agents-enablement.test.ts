// Agent enablement over real HTTP (the state table of "Agent enablement"), on both databases.
import t from 'tap';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';

t.setTimeout(600_000);

for (const db of DB_KINDS) {
  t.test(`agent enablement on ${db}`, { timeout: 120_000 }, async (t) => {
    const server = await startTestServer({ db, env: { PARLEY_MAX_ENABLED_AGENTS: '2' } });
    t.teardown(() => server.close());
    const client = api(server);
    const enabled = async (name: string) =>
      (await server.sql<{ enabled: boolean }[]>`select enabled from agents where name = ${name}`)[0].enabled;

    t.test('new agents are enabled under the maximum and disabled at it; upsert has no 403', async (t) => {
      t.equal((await client.put('/v1/agents/upsert', { name: 'one' })).status, 200);
      t.equal(
        (
          await client.put('/v1/agents/upsert', {
            name: 'two',
            phone_number: 'custom',
            custom_phone_numbers: ['+14155551002'],
          })
        ).status,
        200,
      );
      const third = await client.put('/v1/agents/upsert', { name: 'three' });
      t.equal(third.status, 200);
      t.same([await enabled('one'), await enabled('two'), await enabled('three')], [true, true, false]);
    });

    t.test('enable at the maximum is 403; after a disable it succeeds', async (t) => {
      const refused = await client.post('/v1/agents/three/enable');
      t.equal(refused.status, 403);
      t.equal(refused.body.error.code, 'enabled_agents_limit');
      t.same(await client.post('/v1/agents/one/disable').then((r) => [r.status, r.body]), [200, { success: true }]);
      const ok = await client.post('/v1/agents/three/enable');
      t.same([ok.status, ok.body], [200, { success: true }]);
      t.equal(await enabled('three'), true);
      t.same(
        (await client.post('/v1/agents/three/enable')).body,
        { success: true },
        'enabling an enabled agent is a no-op',
      );
      t.equal((await client.post('/v1/agents/nobody/enable')).status, 404);
    });

    t.test('a disabled agent answers 409 except to an update that only releases its numbers', async (t) => {
      t.equal((await client.post('/v1/agents/two/disable')).status, 200);
      const change = await client.patch('/v1/agents/two', { voice_id: 'sabrina' });
      t.equal(change.status, 409);
      t.equal(change.body.error.code, 'agent_disabled');
      const mixed = await client.patch('/v1/agents/two', { phone_number: null, voice_id: 'sabrina' });
      t.equal(mixed.status, 409);
      t.equal((await client.put('/v1/agents/upsert', { name: 'two' })).status, 409);
      t.equal((await client.patch('/v1/agents/two/phone-numbers', { phone_number: '+14155551003' })).status, 409);
      t.equal(
        (await client.delete('/v1/agents/two/custom-phone-numbers', { phone_number: '+14155551002' })).status,
        409,
      );
      const release = await client.patch('/v1/agents/two', { phone_number: null });
      t.equal(release.status, 200);
      t.same(release.body.agent.phone_numbers, []);
      t.equal(await enabled('two'), false, 'releasing numbers leaves it disabled');
      t.same((await client.get('/v1/agents/two')).body.agent.phone_numbers, []);
    });
  });
}
