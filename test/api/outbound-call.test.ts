// POST /v1/conversations/outbound_call over real HTTP on both databases: the dry run validates everything (body,
// project, agent, tools, the concurrency cap); a real call needs an outbound trunk and the node's SIP service
// (calls placed through a trunk: test/telephony/outbound-calls.test.ts).
import t from 'tap';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';
import { admit } from '../../src/store/leases.js';

const TO = '+14155550123';
const CAP = 2;
const transferTool = {
  name: 'to_desk',
  description: 'Transfer to the desk',
  type: 'built_in_transfer_to_phone_number',
  execution_mode: 'sync',
  phone_number: '+14155550100',
};

// Two databases, each a fresh server: more than tap's default file timeout on a loaded machine.
t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`outbound call on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);
    const call = (body: unknown) => client.post('/v1/conversations/outbound_call', body);

    t.equal((await client.put('/v1/agents/upsert', { name: 'sales' })).status, 200, 'agent sales');
    t.equal((await client.put('/v1/agents/upsert', { name: 'idle' })).status, 200, 'agent idle');
    t.equal((await client.post('/v1/agents/idle/disable')).status, 200, 'idle disabled');
    t.equal((await client.post('/v1/tools', transferTool)).status, 201, 'tool to_desk');
    t.equal((await client.post('/v1/projects', { name: 'side' })).status, 201, 'project side');

    t.test('a valid dry run answers 200 without placing a call', async (t) => {
      for (const body of [
        { to_phone_number: TO, dry_run: true },
        { to_phone_number: TO, dry_run: true, config: { agent: 'sales' } },
        {
          to_phone_number: TO,
          dry_run: true,
          config: { agent: 'sales', project: 'main', tools: ['to_desk'], voice_id: 'grant' },
        },
        {
          to_phone_number: TO,
          dry_run: true,
          config: { system_prompt: 'Be brief.', multilingual_mode: 'auto', additional_languages: ['de', 'fr'] },
        },
      ]) {
        const r = await call(body);
        t.equal(r.status, 200, JSON.stringify(body.config ?? {}));
        t.same(r.body, { conversation_id: null, dry_run: true });
      }
      const [{ n }] = await server.sql<{ n: number }[]>`select count(*)::int as n from conversations`;
      t.equal(n, 0, 'no conversation is recorded by a dry run');
    });

    t.test('validation: 400 with param_errors', async (t) => {
      const cases: [unknown, string][] = [
        [{ dry_run: true }, 'to_phone_number'],
        [{ to_phone_number: '4155550123', dry_run: true }, 'to_phone_number'],
        [{ to_phone_number: '+0123', dry_run: true }, 'to_phone_number'],
        [{ to_phone_number: TO, dry_run: 'yes' }, 'dry_run'],
        [
          {
            to_phone_number: TO,
            dry_run: true,
            config: { multilingual_mode: 'auto', additional_languages: ['de', 'fr', 'es'] },
          },
          'config.additional_languages',
        ],
        [
          { to_phone_number: TO, dry_run: true, config: { default_language: 'de', additional_languages: ['de'] } },
          'config.additional_languages',
        ],
        [{ to_phone_number: TO, dry_run: true, config: { default_language: 'xx' } }, 'config.default_language'],
        [{ to_phone_number: TO, dry_run: true, config: { audio_speed: 1.25 } }, 'config.audio_speed'],
        [{ to_phone_number: TO, dry_run: true, config: { model: 'other' } }, 'config.model'],
        [{ to_phone_number: TO, dry_run: true, config: { tools: ['to_desk', 'nope'] } }, 'config.tools.1'],
        [{ to_phone_number: TO, dry_run: true, config: { voice_id: 'nobody' } }, 'config.voice_id'],
        [
          { to_phone_number: TO, dry_run: true, config: { outbound_number_pool: { active: ['123'], blocked: [] } } },
          'config.outbound_number_pool.active.0',
        ],
        [
          { to_phone_number: TO, dry_run: true, config: { configuration_endpoint: { url: 'http://example.com/cfg' } } },
          'config.configuration_endpoint.url',
        ],
        [
          {
            to_phone_number: TO,
            dry_run: true,
            config: {
              pronunciation_dictionary: [
                { word: 'a', pronunciation: 'x' },
                { word: 'a', pronunciation: 'y' },
              ],
            },
          },
          'config.pronunciation_dictionary.1.word',
        ],
      ];
      for (const [body, param] of cases) {
        const r = await call(body);
        t.equal(r.status, 400, `${JSON.stringify(body)} is refused`);
        t.ok(r.body.param_errors?.[param], `param_errors names ${param} (got ${JSON.stringify(r.body.param_errors)})`);
      }
    });

    t.test('the named agent must exist (404) and be enabled (409); the project must exist (404)', async (t) => {
      const missing = await call({ to_phone_number: TO, dry_run: true, config: { agent: 'ghost' } });
      t.equal(missing.status, 404);
      t.match(missing.body, { error: { message: /ghost/ } });
      const elsewhere = await call({ to_phone_number: TO, dry_run: true, config: { agent: 'sales', project: 'side' } });
      t.equal(elsewhere.status, 404, 'agents are looked up in the named project');
      const disabled = await call({ to_phone_number: TO, dry_run: true, config: { agent: 'idle' } });
      t.equal(disabled.status, 409);
      t.equal(disabled.body.error.code, 'agent_disabled');
      const noProject = await call({ to_phone_number: TO, dry_run: true, config: { agent: 'sales', project: 'nope' } });
      t.equal(noProject.status, 404);
      const tools = await call({
        to_phone_number: TO,
        dry_run: true,
        config: { agent: 'sales', project: 'side', tools: ['to_desk'] },
      });
      t.equal(tools.status, 404, 'the agent is checked before the tools');
    });

    t.test('429 when the project is at its concurrency cap', async (t) => {
      const [main] = await server.sql<{ id: string }[]>`select id from projects where id = ${server.projectId}`;
      await server.sql`update projects set max_active_conversations = ${CAP} where id = ${main.id}`;
      const policy = { nodeId: 'node-test', ttlSec: 60, workspaceCap: 100 };
      for (let i = 0; i < CAP; i++)
        t.equal((await admit(server.sql, policy, main.id, `conv_busy_${i}`)).admitted, true);
      const r = await call({ to_phone_number: TO, dry_run: true, config: { agent: 'sales' } });
      t.equal(r.status, 429);
      t.equal(r.body.error.code, 'concurrency_limit_reached');
      const side = await call({ to_phone_number: TO, dry_run: true, config: { agent: 'sales', project: 'side' } });
      t.equal(side.status, 404, 'other projects are not affected by this cap (but have no agent sales)');
      await server.sql`update conversation_leases set expires_at = now() - interval '1 second' where node_id = 'node-test'`;
      t.equal(
        (await call({ to_phone_number: TO, dry_run: true, config: { agent: 'sales' } })).status,
        200,
        'expired leases free the cap',
      );
      await server.sql`delete from conversation_leases`;
    });

    t.test('a real call without PARLEY_OUTBOUND_TRUNK is 400 naming the setting', async (t) => {
      const r = await call({ to_phone_number: TO, config: { agent: 'sales' } });
      t.equal(r.status, 400);
      t.match(r.body, { error: { message: /PARLEY_OUTBOUND_TRUNK/, code: 'outbound_trunk_not_configured' } });
      t.equal(
        (await call({ to_phone_number: TO, dry_run: false, config: { agent: 'ghost' } })).status,
        404,
        'validation comes first',
      );
    });

    t.test('401 without credentials', async (t) => {
      t.equal(
        (await client.post('/v1/conversations/outbound_call', { to_phone_number: TO, dry_run: true }, { key: null }))
          .status,
        401,
      );
    });
  });

  t.test(`outbound call with a trunk configured on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db, env: { PARLEY_OUTBOUND_TRUNK: 'sip:carrier.invalid:5060' } });
    t.teardown(() => server.close());
    const client = api(server);
    t.equal((await client.put('/v1/agents/upsert', { name: 'sales' })).status, 200, 'agent sales');
    const dry = await client.post('/v1/conversations/outbound_call', { to_phone_number: TO, dry_run: true });
    t.equal(dry.status, 200);
    const real = await client.post('/v1/conversations/outbound_call', {
      to_phone_number: TO,
      config: { agent: 'sales' },
    });
    t.equal(real.status, 503, 'a control plane without a SIP service places no calls');
    t.equal(real.body.error.code, 'outbound_unavailable');
  });
}
