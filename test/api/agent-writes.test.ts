// A write of an agent that keeps its phone numbers is one statement (store/agents.ts updateAgentAtVersion): it
// writes the next version and its history row together, keeps the numbers in the history, refuses at once (409
// agent_busy) while another write holds the agent (in this process, or another transaction's row lock), and
// writes nothing when the agent moved on or went since it was read. On both databases.
import t from 'tap';
import { agentDefaults } from '../../src/schemas/agents.js';
import { agentWriteLocks, AgentBusyError, updateAgentAtVersion } from '../../src/store/agents.js';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';

t.setTimeout(600_000);

const NUMBER = '+14155553001';

for (const db of DB_KINDS) {
  t.test(`agent writes on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);
    const history = async (id: string) =>
      server.sql<{ version: number; config: { system_prompt: string }; phone_numbers: unknown }[]>`
        select version, config, phone_numbers from agent_versions where agent_id = ${id} order by version`;

    const created = await client.put('/v1/agents/upsert', {
      name: 'desk',
      phone_number: 'custom',
      custom_phone_numbers: [NUMBER],
    });
    t.equal(created.status, 200);
    const id: string = created.body.agent.id;

    t.test('a change is the next version, with its numbers in the history', async (t) => {
      const res = await client.put('/v1/agents/upsert', { name: 'desk', system_prompt: 'Revision two.' });
      t.equal(res.status, 200);
      t.same([res.body.inserted, res.body.updated], [false, true]);
      t.same(res.body.agent.phone_numbers, [NUMBER], 'the numbers stay (upsert without phone directives)');
      t.equal(res.body.agent.system_prompt, 'Revision two.');
      t.same(
        (await client.get('/v1/agents/desk')).body.agent,
        res.body.agent,
        'a read answers what the write answered',
      );
      const rows = await history(id);
      t.same(
        rows.map((r) => r.version),
        [1, 2],
      );
      t.equal(rows[1].config.system_prompt, 'Revision two.');
      t.same(rows[1].phone_numbers, [{ number: NUMBER, kind: 'custom' }]);
      const [agent] = await server.sql<{ version: number }[]>`select version from agents where id = ${id}`;
      t.equal(agent.version, 2);
    });

    t.test('the same body again is no change and no version', async (t) => {
      const res = await client.put('/v1/agents/upsert', { name: 'desk', system_prompt: 'Revision two.' });
      t.same([res.status, res.body.updated], [200, false]);
      t.same(
        (await history(id)).map((r) => r.version),
        [1, 2],
      );
    });

    t.test('409 agent_busy while a write of the agent is in flight in this process, changed or not', async (t) => {
      const release = agentWriteLocks(server.ctx).tryAcquire(id);
      t.ok(release, 'took the lock');
      const changed = await client.put('/v1/agents/upsert', { name: 'desk', system_prompt: 'Refused.' });
      t.same([changed.status, changed.body.error?.code], [409, 'agent_busy']);
      const same = await client.put('/v1/agents/upsert', { name: 'desk', system_prompt: 'Revision two.' });
      t.same([same.status, same.body.error?.code], [409, 'agent_busy']);
      release!();
      t.same(
        (await history(id)).map((r) => r.version),
        [1, 2],
        'nothing written',
      );
    });

    if (db === 'postgres') {
      t.test('409 without waiting while another transaction holds the agent row, changed or not', async (t) => {
        await server.sql.begin(async (tx) => {
          await tx`select id from agents where id = ${id} for update`;
          const changed = await client.put('/v1/agents/upsert', { name: 'desk', system_prompt: 'Refused.' });
          t.same([changed.status, changed.body.error?.code], [409, 'agent_busy']);
          const same = await client.put('/v1/agents/upsert', { name: 'desk', system_prompt: 'Revision two.' });
          t.same([same.status, same.body.error?.code], [409, 'agent_busy']);
        });
        const after = await client.put('/v1/agents/upsert', { name: 'desk', system_prompt: 'Revision three.' });
        t.same([after.status, after.body.updated], [200, true]);
        t.same(
          (await history(id)).map((r) => r.version),
          [1, 2, 3],
        );
      });
    }

    t.test('a write judged on a version the agent has left writes nothing', async (t) => {
      const [{ version }] = await server.sql<{ version: number }[]>`select version from agents where id = ${id}`;
      const w = { name: 'desk', slug: null, config: { ...agentDefaults(), system_prompt: 'Stale.' } };
      const phones = [{ number: NUMBER, kind: 'custom' as const }];
      const stale = await updateAgentAtVersion(server.sql, id, version - 1, w, phones);
      t.same(stale, { lockedVersion: version }, 'the version found, no row written');
      t.equal((await history(id)).length, version, 'no history row');
      t.not((await client.get('/v1/agents/desk')).body.agent.system_prompt, 'Stale.');

      const fresh = await updateAgentAtVersion(server.sql, id, version, w, phones);
      t.equal(fresh.lockedVersion, version);
      t.equal(fresh.row?.version, version + 1);
      t.equal(fresh.row?.config.system_prompt, 'Stale.');

      const gone = await updateAgentAtVersion(server.sql, 'agent_00000000-0000-4000-8000-000000000000', 1, w, phones);
      t.same(gone, { lockedVersion: null }, 'a missing agent');
    });

    if (db === 'postgres') {
      t.test('the store answers AgentBusyError for a row another transaction holds', async (t) => {
        const w = { name: 'desk', slug: null, config: agentDefaults() };
        await server.sql.begin(async (tx) => {
          await tx`select id from agents where id = ${id} for update`;
          await t.rejects(updateAgentAtVersion(server.sql, id, 1, w, []), AgentBusyError);
        });
      });
    }
  });
}
