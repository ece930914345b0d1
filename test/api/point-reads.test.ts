// Point reads (store/db.ts pointReads): on PostgreSQL the agent read and the credential lookup run on one
// connection of their own, named in pg_stat_activity, where the statements of concurrent requests are pipelined;
// each request still gets its own answer, and a read sees what a write committed before it. The embedded
// database has one connection, which is also its point-read connection.
import t from 'tap';
import { pointReads, POINT_READS_APPLICATION_NAME } from '../../src/store/db.js';
import { api, startTestServer } from '../helpers/server.js';

t.setTimeout(300_000);

const AGENTS = 20;
const READS_PER_AGENT = 10;
const WRITE_THEN_READ = 30;

t.test('point reads on postgres', async (t) => {
  const server = await startTestServer({ db: 'postgres' });
  t.teardown(() => server.close());
  const client = api(server);
  const lanes = async () =>
    server.sql<{ query: string }[]>`
      select query from pg_stat_activity
      where datname = current_database() and application_name = ${POINT_READS_APPLICATION_NAME}`;

  t.not(pointReads(server.sql), server.sql, 'a connection of their own');
  const names = Array.from({ length: AGENTS }, (_, i) => `agent-${i}`);
  for (const name of names) await client.put('/v1/agents/upsert', { name, system_prompt: `I am ${name}.` });

  t.test('concurrent reads each get their own agent', async (t) => {
    const order = names.flatMap((name) => Array.from({ length: READS_PER_AGENT }, () => name));
    const answers = await Promise.all(order.map((name) => client.get(`/v1/agents/${name}`)));
    const wrong = answers.filter(
      (res, i) =>
        res.status !== 200 || res.body.agent.name !== order[i] || res.body.agent.system_prompt !== `I am ${order[i]}.`,
    );
    t.equal(wrong.length, 0);
    const rows = await lanes();
    t.equal(rows.length, 1, 'one point-read connection');
    t.match(rows[0].query, /from agents a join projects p/, 'the agent read ran on it');
  });

  t.test('the credential lookup runs there too', async (t) => {
    const created = await client.post('/v1/api_keys', { name: 'reader' });
    t.equal(created.status, 201);
    // A route whose own statements run on the pool: the last statement of the point-read connection is the lookup.
    t.equal(
      (await client.get('/v1/api_keys', undefined, { key: created.body.api_key })).status,
      200,
      'a key not yet cached',
    );
    t.match((await lanes())[0].query, /from api_keys k join organizations o/);
  });

  t.test('a read sees the write that ended before it, every time', async (t) => {
    let stale = 0;
    for (let i = 0; i < WRITE_THEN_READ; i++) {
      const prompt = `Revision ${i}.`;
      t.equal((await client.put('/v1/agents/upsert', { name: 'agent-0', system_prompt: prompt })).status, 200);
      if ((await client.get('/v1/agents/agent-0')).body.agent.system_prompt !== prompt) stale++;
    }
    t.equal(stale, 0);
  });
});

t.test('the embedded database reads on its one connection', async (t) => {
  const server = await startTestServer({ db: 'pglite' });
  t.teardown(() => server.close());
  t.equal(pointReads(server.sql), server.sql);
  const client = api(server);
  t.equal((await client.put('/v1/agents/upsert', { name: 'solo' })).status, 200);
  t.equal((await client.get('/v1/agents/solo')).body.agent.name, 'solo');
});
