// Phone numbers of an agent over real HTTP, on both databases.
import t from 'tap';
import { ConfigError, loadSettings } from '../../src/config.js';
import { agentByPhoneNumber, agentWriteLocks } from '../../src/store/agents.js';
import { api, createWorkspace, DB_KINDS, startTestServer } from '../helpers/server.js';

t.setTimeout(600_000);

t.test(
  'PARLEY_PHONE_NUMBERS takes comma-separated E.164 numbers; anything else stops start-up naming it',
  async (t) => {
    t.equal(
      loadSettings({ PARLEY_PHONE_NUMBERS: '+14155550100, +14155550101' }).PARLEY_PHONE_NUMBERS,
      '+14155550100, +14155550101',
    );
    const err = t.throws(() => loadSettings({ PARLEY_PHONE_NUMBERS: '+14155550100,4155550101' })) as ConfigError;
    t.ok(err instanceof ConfigError);
    t.equal(err.problems[0]?.setting, 'PARLEY_PHONE_NUMBERS');
  },
);

for (const db of DB_KINDS) {
  t.test(`phone numbers on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db, env: { PARLEY_PHONE_NUMBERS: '+14155552000' } });
    t.teardown(() => server.close());
    const client = api(server);
    const sales = (await client.put('/v1/agents/upsert', { name: 'sales' })).body.agent;
    t.equal((await client.put('/v1/agents/upsert', { name: 'support' })).status, 200);
    const numbersOf = async (name: string) => (await client.get(`/v1/agents/${name}`)).body.agent.phone_numbers;
    const endpointOf = async (n: string) =>
      (
        await server.sql<
          { configuration_endpoint: unknown }[]
        >`select configuration_endpoint from agent_phone_numbers where number = ${n}`
      )[0]?.configuration_endpoint;

    t.test('PATCH assigns a number with its configuration endpoint, then updates the endpoint', async (t) => {
      const res = await client.patch('/v1/agents/sales/phone-numbers', {
        phone_number: '+14155552001',
        configuration_endpoint: { url: 'https://config.example.com/calls', headers: { 'x-token': 'abc' } },
      });
      t.equal(res.status, 200);
      t.same(res.body, { success: true });
      t.same(await numbersOf('sales'), ['+14155552001']);
      t.same(await endpointOf('+14155552001'), {
        url: 'https://config.example.com/calls',
        headers: { 'x-token': 'abc' },
        timeout_ms: 3000,
      });
      const again = await client.patch(`/v1/agents/${sales.id}/phone-numbers`, {
        phone_number: '+14155552001',
        configuration_endpoint: null,
      });
      t.equal(again.status, 200);
      t.equal(await endpointOf('+14155552001'), null);
      const agent = (await client.get('/v1/agents/sales')).body.agent;
      t.match(agent, { custom_phone_numbers: ['+14155552001'], audio_format: 'mulaw_8000' });
      const inbound = await agentByPhoneNumber(server.sql, '+14155552001');
      t.equal(inbound?.row.id, sales.id, 'an inbound call on the number finds its agent');
      t.equal(inbound?.phone.kind, 'custom');
      t.equal(await agentByPhoneNumber(server.sql, '+14155552999'), undefined);
      const hist = await server.sql<
        { version: number }[]
      >`select version from agent_versions where agent_id = ${sales.id} order by version`;
      t.same(
        hist.map((r) => r.version),
        [1, 2, 3],
        'each change of numbers is a version',
      );
    });

    t.test('PATCH 400: invalid number, invalid endpoint, number of another agent', async (t) => {
      const bad = await client.patch('/v1/agents/sales/phone-numbers', { phone_number: '4155552001' });
      t.equal(bad.status, 400);
      t.ok('phone_number' in bad.body.param_errors);
      const missing = await client.patch('/v1/agents/sales/phone-numbers', {});
      t.equal(missing.status, 400);
      t.ok('phone_number' in missing.body.param_errors);
      const url = await client.patch('/v1/agents/sales/phone-numbers', {
        phone_number: '+14155552005',
        configuration_endpoint: { url: 'https://localhost/cfg' },
      });
      t.equal(url.status, 400);
      t.ok('configuration_endpoint.url' in url.body.param_errors);
      const taken = await client.patch('/v1/agents/support/phone-numbers', { phone_number: '+14155552001' });
      t.equal(taken.status, 400);
      t.match(taken.body.param_errors.phone_number, /already assigned/);
      t.same(await numbersOf('support'), []);
    });

    t.test('PATCH 404 agent, 403 another organization, 401 a session token', async (t) => {
      t.equal((await client.patch('/v1/agents/nobody/phone-numbers', { phone_number: '+14155552009' })).status, 404);
      const other = await createWorkspace(server.sql, `phones-other-${db}`);
      const theirs = api({ url: server.url, apiKey: other.apiKey });
      const theirAgent = (await theirs.put('/v1/agents/upsert', { name: 'theirs' })).body.agent;
      t.equal(
        (await client.patch(`/v1/agents/${theirAgent.id}/phone-numbers`, { phone_number: '+14155552009' })).status,
        403,
      );
      t.equal(
        (await client.delete(`/v1/agents/${theirAgent.id}/custom-phone-numbers`, { phone_number: '+14155552009' }))
          .status,
        403,
      );
      const token = (await client.post('/v1/auth/session_token', {})).body.session_token;
      const byToken = await client.patch(
        '/v1/agents/sales/phone-numbers',
        { phone_number: '+14155552009' },
        { key: token },
      );
      t.equal(byToken.status, 401);
      t.equal(
        (await client.delete('/v1/agents/sales/custom-phone-numbers', { phone_number: '+14155552001' }, { key: token }))
          .status,
        401,
      );
      t.equal(
        (await client.patch('/v1/agents/sales/phone-numbers', { phone_number: '+14155552009' }, { key: null })).status,
        401,
      );
    });

    t.test('DELETE: 404 unknown number, 400 number of another agent, 400 not custom, 200 custom', async (t) => {
      const unknown = await client.delete('/v1/agents/sales/custom-phone-numbers', { phone_number: '+14155559999' });
      t.equal(unknown.status, 404);
      t.equal(
        (await client.delete('/v1/agents/nobody/custom-phone-numbers', { phone_number: '+14155552001' })).status,
        404,
      );
      const auto = await client.patch('/v1/agents/support', { phone_number: 'assign-automatically' });
      t.same(auto.body.agent.phone_numbers, ['+14155552000']);
      const notMine = await client.delete('/v1/agents/sales/custom-phone-numbers', { phone_number: '+14155552000' });
      t.equal(notMine.status, 400);
      t.match(notMine.body.param_errors.phone_number, /not assigned/);
      const notCustom = await client.delete('/v1/agents/support/custom-phone-numbers', {
        phone_number: '+14155552000',
      });
      t.equal(notCustom.status, 400);
      t.match(notCustom.body.param_errors.phone_number, /not a custom number/);
      const bad = await client.delete('/v1/agents/sales/custom-phone-numbers', { phone_number: 'nope' });
      t.equal(bad.status, 400);
      t.ok('phone_number' in bad.body.param_errors);
      const ok = await client.delete('/v1/agents/sales/custom-phone-numbers', { phone_number: '+14155552001' });
      t.same([ok.status, ok.body], [200, { success: true }]);
      t.same(await numbersOf('sales'), []);
      t.equal((await client.get('/v1/agents/sales')).body.agent.audio_format, 'pcm_44100');
    });

    t.test('409 while another write of the agent is in flight (in-process lock)', async (t) => {
      const release = agentWriteLocks(server.ctx).tryAcquire(sales.id);
      t.ok(release, 'took the lock');
      const patch = await client.patch('/v1/agents/sales/phone-numbers', { phone_number: '+14155552010' });
      t.equal(patch.status, 409);
      t.equal(patch.body.error.code, 'agent_busy');
      const del = await client.delete('/v1/agents/sales/custom-phone-numbers', { phone_number: '+14155552010' });
      t.equal(del.status, 409);
      const update = await client.patch('/v1/agents/sales', { phone_number: null });
      t.equal(update.status, 409, 'an agent update is refused too');
      release!();
      const after = await client.patch('/v1/agents/sales/phone-numbers', { phone_number: '+14155552010' });
      t.equal(after.status, 200, 'free again once the write ends');
    });

    if (db === 'postgres') {
      t.test('409 without waiting while another node holds the agent row (FOR UPDATE NOWAIT)', async (t) => {
        await server.sql.begin(async (tx) => {
          await tx`select id from agents where id = ${sales.id} for update`;
          const res = await client.patch('/v1/agents/sales/phone-numbers', { phone_number: '+14155552011' });
          t.equal(res.status, 409);
          t.equal(res.body.error.code, 'agent_busy');
        });
        const after = await client.patch('/v1/agents/sales/phone-numbers', { phone_number: '+14155552011' });
        t.equal(after.status, 200);
      });
    }

    t.test('concurrent requests on one agent: each answers 200 or 409, never waits into a wrong state', async (t) => {
      const numbers = ['+14155552021', '+14155552022', '+14155552023', '+14155552024'];
      const results = await Promise.all(
        numbers.map((n) => client.patch('/v1/agents/support/phone-numbers', { phone_number: n })),
      );
      for (const r of results) t.ok(r.status === 200 || r.status === 409, `status ${r.status}`);
      const assigned = await numbersOf('support');
      const won = numbers.filter((_, i) => results[i].status === 200);
      t.same(assigned, ['+14155552000', ...won].sort(), 'exactly the accepted numbers were assigned');
      t.ok(won.length >= 1);
    });
  });
}
