// Agents over real HTTP (create/get/list/delete/disable), on both databases.
import t from 'tap';
import { api, createWorkspace, DB_KINDS, startTestServer } from '../helpers/server.js';

// Each server restores or creates a database and the cases run in sequence: more than tap's default per file.
t.setTimeout(600_000);

/** Spec, "Agent (response record)": these fields, in this order, first. */
const LISTED = [
  'id',
  'name',
  'phone_numbers',
  'project',
  'timezone',
  'voice_id',
  'audio_format',
  'audio_speed',
  'background_noise_level',
  'background_noise',
  'generate_welcome_message',
  'is_welcome_message_interruptible',
  'listen_only_inbound_enabled',
  'listen_only_inbound_message',
  'welcome_message',
  'system_prompt',
  'template_variables',
  'tools',
  'built_in_tool_configs',
  'tasks',
  'generate_no_input_poke_text',
  'no_input_poke_sec',
  'no_input_poke_text',
];
const POOL = ['+14155550001', '+14155550002'];

for (const db of DB_KINDS) {
  t.test(`agents on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db, env: { PARLEY_PHONE_NUMBERS: POOL.join(',') } });
    t.teardown(() => server.close());
    const client = api(server);
    const versions = async (id: string) =>
      (
        await server.sql<
          { version: number }[]
        >`select version from agent_versions where agent_id = ${id} order by version`
      ).map((r) => r.version);

    t.test('upsert creates an agent with the API defaults', async (t) => {
      const res = await client.put('/v1/agents/upsert', { name: 'sales' });
      t.equal(res.status, 200);
      t.equal(res.body.inserted, true);
      t.equal(res.body.updated, false);
      const a = res.body.agent;
      t.same(Object.keys(a).slice(0, LISTED.length), LISTED);
      t.match(a.id, /^agent_[0-9a-f-]{36}$/);
      t.match(a, {
        name: 'sales',
        phone_numbers: [],
        project: { id: server.projectId, name: 'main' },
        voice_id: 'grant',
        audio_format: 'pcm_44100',
        audio_speed: 1.2,
        background_noise_level: 0,
        generate_welcome_message: false,
        is_welcome_message_interruptible: true,
        websocket_timeout_sec: 60,
        no_input_end_conversation_sec: 180,
        min_words_to_interrupt: 1,
        inbound_rollout: 1,
        inbound_rollout_forward_phone_number: null,
        vad_prebuffer_duration_ms: 500,
        vad_min_speech_duration_ms: 50,
        vad_min_silence_duration_ms: 800,
        vad_threshold: 0.38,
        multilingual_mode: 'request',
        intelligence_level: 'standard',
        additional_languages: [],
        custom_phone_numbers: [],
        mcp_server_ids: [],
        observability_integrations: [],
        assistant_backchannel_aggressiveness: 0.1,
        languages: ['en'],
        enable_redaction: false,
        push_to_talk: false,
      });
      t.match(a.system_prompt, /\{\{system_date\}\}/);
      t.same(await versions(a.id), [1]);
    });

    t.test(
      'upsert again: unchanged is not an update; a change is, and fields not sent return to their defaults',
      async (t) => {
        const same = await client.put('/v1/agents/upsert', { name: 'sales' });
        t.same([same.body.inserted, same.body.updated], [false, false]);
        const changed = await client.put('/v1/agents/upsert', { name: 'sales', voice_id: 'sabrina', audio_speed: 1.5 });
        t.same([changed.body.inserted, changed.body.updated], [false, true]);
        t.match(changed.body.agent, { voice_id: 'sabrina', audio_speed: 1.5 });
        const back = await client.put('/v1/agents/upsert', { name: 'sales', audio_speed: 1.5 });
        t.equal(back.body.agent.voice_id, 'grant', 'upsert replaces: voice_id takes its default again');
        t.same(await versions(same.body.agent.id), [1, 2, 3]);
      },
    );

    t.test('update changes only what it is sent and bumps the version by one', async (t) => {
      const before = (await client.get('/v1/agents/sales')).body.agent;
      const res = await client.patch('/v1/agents/sales', {
        welcome_message: 'Hello {{customer_name}}',
        template_variables: { customer_name: { default_value: 'there' } },
      });
      t.equal(res.status, 200);
      t.equal(res.body.success, true);
      t.equal(res.body.version_number, 4);
      t.same(res.body.agent, {
        ...before,
        welcome_message: 'Hello {{customer_name}}',
        template_variables: { customer_name: { default_value: 'there' } },
      });
      const again = await client.patch(`/v1/agents/${before.id}`, { no_input_poke_sec: 10 });
      t.equal(again.body.version_number, 5);
      t.equal(again.body.agent.welcome_message, 'Hello {{customer_name}}');
      t.equal(again.body.agent.audio_speed, 1.5);
      const noop = await client.patch('/v1/agents/sales', {});
      t.equal(noop.body.version_number, 5, 'an empty update is not a change');
      t.same(await versions(before.id), [1, 2, 3, 4, 5]);
    });

    t.test('deprecated languages map to default_language and additional_languages', async (t) => {
      const res = await client.put('/v1/agents/upsert', { name: 'polyglot', languages: ['de', 'fr'] });
      t.match(res.body.agent, { default_language: 'de', additional_languages: ['fr'], languages: ['de', 'fr'] });
    });

    t.test('create (POST), get, list, and 409 for an existing name', async (t) => {
      const created = await client.post('/v1/agents', { name: 'support', slug: 'help-desk' });
      t.equal(created.status, 201);
      t.equal(created.body.agent.slug, 'help-desk');
      const dup = await client.post('/v1/agents', { name: 'support' });
      t.equal(dup.status, 409);
      t.ok('name' in dup.body.param_errors);
      const byId = await client.get(`/v1/agents/${created.body.agent.id}`);
      t.same(byId.body, created.body);
      const list = await client.get('/v1/agents');
      t.equal(list.status, 200);
      t.same(
        list.body.agents.map((a: { name: string }) => a.name),
        ['sales', 'polyglot', 'support'],
      );
      t.equal((await client.get('/v1/agents/nobody')).status, 404);
      t.equal((await client.get('/v1/agents?project=nope')).status, 404);
      t.equal((await client.put('/v1/agents/upsert?project=nope', { name: 'x' })).status, 404);
    });

    t.test('400 with param_errors keyed by the offending parameter', async (t) => {
      const cases: [string, Record<string, unknown>, string][] = [
        ['name format', { name: 'Sales Bot' }, 'name'],
        ['name required', { voice_id: 'grant' }, 'name'],
        ['slug format', { name: 'a1', slug: 'Not_A_Slug' }, 'slug'],
        ['slug unique', { name: 'a2', slug: 'help-desk' }, 'slug'],
        ['LANG code', { name: 'a3', default_language: 'english' }, 'default_language'],
        [
          'additional contains default',
          { name: 'a4', default_language: 'en', additional_languages: ['de', 'en'] },
          'additional_languages',
        ],
        [
          'auto allows 2 more',
          { name: 'a5', multilingual_mode: 'auto', additional_languages: ['de', 'fr', 'es'] },
          'additional_languages',
        ],
        ['audio_speed tenths', { name: 'a6', audio_speed: 1.25 }, 'audio_speed'],
        ['noise level range', { name: 'a7', background_noise_level: 2 }, 'background_noise_level'],
        ['rollout range', { name: 'a8', inbound_rollout: 1.5 }, 'inbound_rollout'],
        [
          'rollout needs a phone number',
          { name: 'a9', inbound_rollout: 0.5, inbound_rollout_forward_phone_number: '+14155550999' },
          'inbound_rollout',
        ],
        [
          'rollout needs a forward number',
          { name: 'a10', inbound_rollout: 0.5, phone_number: 'custom', custom_phone_numbers: ['+14155550998'] },
          'inbound_rollout_forward_phone_number',
        ],
        [
          'forward number null at 1',
          { name: 'a11', inbound_rollout_forward_phone_number: '+14155550999' },
          'inbound_rollout_forward_phone_number',
        ],
        [
          'forward number E.164',
          { name: 'a12', inbound_rollout_forward_phone_number: '555' },
          'inbound_rollout_forward_phone_number',
        ],
        ['listen-only message', { name: 'a13', listen_only_inbound_enabled: true }, 'listen_only_inbound_message'],
        [
          'pronunciation words unique',
          {
            name: 'a14',
            pronunciation_dictionary: [
              { word: 'SQL', pronunciation: 'sequel' },
              { word: 'SQL', pronunciation: 'S Q L' },
            ],
          },
          'pronunciation_dictionary.1.word',
        ],
        [
          'custom numbers unique',
          { name: 'a15', phone_number: 'custom', custom_phone_numbers: ['+14155550997', '+14155550997'] },
          'custom_phone_numbers.1',
        ],
        ['custom needs numbers', { name: 'a16', phone_number: 'custom' }, 'custom_phone_numbers'],
        [
          'retention form',
          { name: 'a17', data_retention_policy: { zero_data_retention: false } },
          'data_retention_policy.transcripts',
        ],
        [
          'storage needs zero retention',
          { name: 'a18', external_storage_policy: 'archive' },
          'external_storage_policy',
        ],
        [
          'storage excludes redaction',
          {
            name: 'a19',
            external_storage_policy: 'archive',
            data_retention_policy: { zero_data_retention: true },
            enable_redaction: true,
          },
          'external_storage_policy',
        ],
        [
          'storage policy exists',
          { name: 'a20', external_storage_policy: 'archive', data_retention_policy: { zero_data_retention: true } },
          'external_storage_policy',
        ],
        [
          'configuration endpoint public https',
          { name: 'a21', configuration_endpoint: { url: 'https://192.168.0.5/config' } },
          'configuration_endpoint.url',
        ],
        [
          'configuration endpoint no credentials',
          { name: 'a22', configuration_endpoint: { url: 'https://user:pw@config.example.com' } },
          'configuration_endpoint.url',
        ],
        ['unknown tool', { name: 'a23', tools: ['keypad_input', 'no_such_tool'] }, 'tools.1'],
        [
          'built-in config key',
          { name: 'a24', built_in_tool_configs: { teleport: {} } },
          'built_in_tool_configs.teleport',
        ],
        ['integrations only on update', { name: 'a25', integrations: [] }, 'integrations'],
        ['enum', { name: 'a26', audio_format: 'mp3' }, 'audio_format'],
        ['timezone', { name: 'a27', timezone: 'Nowhere/Land' }, 'timezone'],
        ['voice in the catalog', { name: 'a28', voice_id: 'nobody' }, 'voice_id'],
      ];
      for (const [what, body, param] of cases) {
        const res = await client.put('/v1/agents/upsert', body);
        t.equal(res.status, 400, what);
        t.ok(param in (res.body.param_errors ?? {}), `${what}: ${param} in ${JSON.stringify(res.body.param_errors)}`);
        t.type(res.body.error?.message, 'string');
      }
      t.equal((await client.get('/v1/agents/a9')).status, 404, 'a refused upsert creates nothing');
    });

    t.test('an external storage policy of the project with zero data retention', async (t) => {
      const policy = await client.post('/v1/external_storage_policies', {
        name: 'archive',
        endpoint_url: 'https://s3.example.com',
        bucket: 'calls',
        access_key_id: 'AKIAEXAMPLE',
        secret_access_key: 'secret-example-key',
      });
      t.equal(policy.status, 201);
      const res = await client.put('/v1/agents/upsert', {
        name: 'archiver',
        external_storage_policy: 'archive',
        data_retention_policy: { zero_data_retention: true },
      });
      t.equal(res.status, 200);
      t.match(res.body.agent, {
        external_storage_policy: 'archive',
        data_retention_policy: { zero_data_retention: true },
      });
      const redact = await client.patch('/v1/agents/archiver', { enable_redaction: true });
      t.equal(redact.status, 400, 'the merged agent would combine storage and redaction');
      t.ok('external_storage_policy' in redact.body.param_errors);
      const stop = await client.patch('/v1/agents/archiver', { external_storage_policy: null, enable_redaction: true });
      t.equal(stop.status, 200, 'null stops delivery');
      t.equal(stop.body.agent.external_storage_policy, null);
    });

    t.test('update rules are judged on the merged agent', async (t) => {
      const bad = await client.patch('/v1/agents/polyglot', { additional_languages: ['de'] });
      t.equal(bad.status, 400);
      t.ok('additional_languages' in bad.body.param_errors, 'default_language de from the stored agent');
      const rename = await client.patch('/v1/agents/polyglot', { name: 'sales' });
      t.equal(rename.status, 400);
      t.ok('name' in rename.body.param_errors);
      const integrations = [
        { account_id: 'acc', account_name: null, action_names: ['create_ticket'], app_slug: 'helpdesk' },
      ];
      const ok = await client.patch('/v1/agents/polyglot', { integrations, multilingual_mode: 'auto' });
      t.equal(ok.status, 200);
      t.same(ok.body.agent.integrations, integrations);
      const tooMany = await client.patch('/v1/agents/polyglot', { additional_languages: ['fr', 'es', 'it'] });
      t.equal(tooMany.status, 400);
      t.ok('additional_languages' in tooMany.body.param_errors);
    });

    t.test('a tool of the project and built-in tools can be named', async (t) => {
      const tool = await client.post('/v1/tools', {
        name: 'faq',
        description: 'd',
        type: 'custom_context',
        execution_mode: 'sync',
        context: 'Open 9 to 5',
      });
      t.equal(tool.status, 201);
      const res = await client.patch('/v1/agents/support', {
        tools: ['faq', 'natural_conversation_ending'],
        built_in_tool_configs: { natural_conversation_ending: { speech_before_tool_call: 'required' } },
      });
      t.equal(res.status, 200);
      t.same(res.body.agent.tools, ['faq', 'natural_conversation_ending']);
      t.equal((await client.delete('/v1/tools/faq')).status, 200);
      const other = await client.patch('/v1/agents/support', { welcome_message: 'Hi' });
      t.equal(other.status, 200, 'a deleted tool does not block changes that do not touch tools');
      t.same(other.body.agent.tools, ['faq', 'natural_conversation_ending']);
      const again = await client.patch('/v1/agents/support', { tools: ['faq'] });
      t.equal(again.status, 400, 'naming it again is refused');
      t.ok('tools.0' in again.body.param_errors);
    });

    t.test('assign-automatically draws from the inventory; the agent then reports mulaw_8000', async (t) => {
      const res = await client.patch('/v1/agents/sales', { phone_number: 'assign-automatically' });
      t.equal(res.status, 200);
      t.equal(res.body.agent.phone_numbers.length, 1);
      t.ok(POOL.includes(res.body.agent.phone_numbers[0]));
      t.equal(res.body.agent.audio_format, 'mulaw_8000');
      t.equal(res.body.agent.phone_number, 'assign-automatically');
      const again = await client.patch('/v1/agents/sales', { phone_number: 'assign-automatically' });
      t.same(again.body.agent.phone_numbers, res.body.agent.phone_numbers, 'no effect when the agent has a number');
      const second = await client.put('/v1/agents/upsert', {
        name: 'second-line',
        phone_number: 'assign-automatically',
      });
      t.equal(second.status, 200);
      t.same(
        second.body.agent.phone_numbers,
        POOL.filter((n) => n !== res.body.agent.phone_numbers[0]),
        'a number belongs to one agent',
      );
      const none = await client.put('/v1/agents/upsert', { name: 'third-line', phone_number: 'assign-automatically' });
      t.equal(none.status, 400, 'no free number left');
      t.ok('phone_number' in none.body.param_errors);
      t.equal((await client.get('/v1/agents/third-line')).status, 404);
      await server.sql`insert into phone_number_inventory (number, org_id) values ('+14155550003', ${server.orgId})`;
      const fromTable = await client.put('/v1/agents/upsert', {
        name: 'third-line',
        phone_number: 'assign-automatically',
      });
      t.same(fromTable.body.agent.phone_numbers, ['+14155550003'], 'the inventory table is drawn from too');
      const keep = await client.put('/v1/agents/upsert', { name: 'third-line', voice_id: 'sabrina' });
      t.same(keep.body.agent.phone_numbers, ['+14155550003'], 'upsert without phone_number keeps the numbers');
      const release = await client.patch('/v1/agents/third-line', { phone_number: null });
      t.same(release.body.agent.phone_numbers, []);
      t.equal(release.body.agent.audio_format, 'pcm_44100');
    });

    t.test('custom numbers: set, unique across agents, rollout with a forward number', async (t) => {
      const res = await client.patch('/v1/agents/support', {
        phone_number: 'custom',
        custom_phone_numbers: ['+442071234567'],
      });
      t.equal(res.status, 200);
      t.match(res.body.agent, {
        phone_numbers: ['+442071234567'],
        custom_phone_numbers: ['+442071234567'],
        phone_number: 'custom',
        audio_format: 'mulaw_8000',
      });
      const byName = await client.get('/v1/agents/support');
      t.same(byName.body, { agent: res.body.agent }, 'the one-query read by name gives the same record');
      t.same((await client.get(`/v1/agents/${res.body.agent.id}`)).body, byName.body);
      t.same((await client.get(`/v1/agents/support?project=${server.projectId}`)).body, byName.body, 'project by id');
      const taken = await client.patch('/v1/agents/polyglot', {
        phone_number: 'custom',
        custom_phone_numbers: ['+442071234567'],
      });
      t.equal(taken.status, 400);
      t.ok('custom_phone_numbers.0' in taken.body.param_errors);
      const rollout = await client.patch('/v1/agents/support', {
        inbound_rollout: 0.3,
        inbound_rollout_forward_phone_number: '+442071234999',
      });
      t.equal(rollout.status, 200);
      t.equal(rollout.body.agent.inbound_rollout, 0.3);
      const dropNumbers = await client.patch('/v1/agents/support', { phone_number: null });
      t.equal(dropNumbers.status, 400, 'rollout below 1 needs a number');
      t.ok('inbound_rollout' in dropNumbers.body.param_errors);
    });

    t.test('delete; then 404', async (t) => {
      const del = await client.delete('/v1/agents/second-line');
      t.equal(del.status, 200);
      t.same(del.body, { success: true });
      t.equal((await client.get('/v1/agents/second-line')).status, 404);
      t.equal((await client.delete('/v1/agents/second-line')).status, 404);
      const reuse = await client.put('/v1/agents/upsert', {
        name: 'fourth-line',
        phone_number: 'assign-automatically',
      });
      t.equal(reuse.body.agent.phone_numbers.length, 1, 'a deleted agent frees its number');
    });

    t.test('another organization: 403 by id, 404 by name; session tokens cannot write', async (t) => {
      const other = await createWorkspace(server.sql, `agents-other-${db}`);
      const theirs = api({ url: server.url, apiKey: other.apiKey });
      const created = await theirs.put('/v1/agents/upsert', { name: 'private-bot' });
      t.equal(created.status, 200);
      const id = created.body.agent.id;
      t.equal((await client.get(`/v1/agents/${id}`)).status, 403);
      t.equal((await client.patch(`/v1/agents/${id}`, { voice_id: 'x' })).status, 403);
      t.equal((await client.delete(`/v1/agents/${id}`)).status, 403);
      t.equal((await client.post(`/v1/agents/${id}/enable`)).status, 403);
      t.equal((await client.post(`/v1/agents/${id}/disable`)).status, 403);
      t.equal((await client.get('/v1/agents/private-bot')).status, 404);
      const token = (await client.post('/v1/auth/session_token', {})).body.session_token;
      t.equal((await client.put('/v1/agents/upsert', { name: 'by-token' }, { key: token })).status, 403);
      t.equal((await client.get('/v1/agents', undefined, { key: null })).status, 401);
    });
  });
}
