// Tools over real HTTP (get/update), on both databases.
import t from 'tap';
import { toolByName, toolsByNames, updateTool } from '../../src/store/tools.js';
import { api, createWorkspace, DB_KINDS, startTestServer } from '../helpers/server.js';

t.setTimeout(600_000);

const webhook = {
  name: 'get_weather',
  description: 'Weather for a city',
  type: 'custom_webhook',
  execution_mode: 'sync',
  endpoint_method: 'POST',
  endpoint_url: 'https://api.example.com/weather/{city}',
  parameters: [
    { type: 'string', name: 'city', description: 'City', is_required: true, location: 'url_path' },
    { type: 'string', name: 'units', description: 'metric or imperial', is_required: false, location: 'request_body' },
  ],
};
const transfer = {
  name: 'to_desk',
  description: 'Transfer to the desk',
  type: 'built_in_transfer_to_phone_number',
  execution_mode: 'sync',
  phone_number: '+14155550100',
};

for (const db of DB_KINDS) {
  t.test(`tools on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);

    t.test('create answers 201 {id, name}; the tool lists with its defaults and project', async (t) => {
      const created = await client.post('/v1/tools', webhook);
      t.equal(created.status, 201);
      t.match(created.body.id, /^tool_[0-9a-f-]{36}$/);
      t.same(Object.keys(created.body).sort(), ['id', 'name']);
      t.equal(created.body.name, 'get_weather');
      const list = await client.get('/v1/tools');
      t.equal(list.status, 200);
      t.equal(list.body.tools.length, 1);
      t.match(list.body.tools[0], {
        id: created.body.id,
        name: 'get_weather',
        description: 'Weather for a city',
        type: 'custom_webhook',
        execution_mode: 'sync',
        parameters: webhook.parameters,
        endpoint_method: 'POST',
        endpoint_url: webhook.endpoint_url,
        endpoint_timeout_ms: 5000,
        allow_tool_chaining: true,
        uninterruptible: false,
        require_speech_before_tool_call: false,
        project: { id: server.projectId, name: 'main' },
      });
      t.notOk('parameter_locations' in list.body.tools[0]);
    });

    t.test('409 for a name that exists in the organization', async (t) => {
      const dup = await client.post('/v1/tools', { ...webhook, description: 'again' });
      t.equal(dup.status, 409);
      t.match(dup.body, { error: { message: /get_weather/, code: 'name_exists' } });
      await client.post('/v1/projects', { name: 'other-project' });
      const otherProject = await client.post('/v1/tools?project=other-project', webhook);
      t.equal(otherProject.status, 409, 'names are unique across the projects of the organization');
    });

    t.test('JSON-Schema parameters come back as defined, with parameter_locations separately', async (t) => {
      const parameters = {
        type: 'object',
        properties: { city: { type: 'string' }, day: { type: 'string', enum: ['today', 'tomorrow'] } },
        required: ['city'],
      };
      const created = await client.post('/v1/tools', {
        ...webhook,
        name: 'forecast',
        endpoint_url: 'https://api.example.com/forecast',
        parameters,
        parameter_locations: { city: 'query_string', day: 'request_body' },
      });
      t.equal(created.status, 201);
      const got = await client.get('/v1/tools/forecast');
      t.equal(got.status, 200);
      t.same(got.body.tool.parameters, parameters);
      t.same(got.body.tool.parameter_locations, { city: 'query_string', day: 'request_body' });
    });

    t.test('phone transfer defaults: keep_listening from use_agent_phone_number, uninterruptible true', async (t) => {
      t.equal((await client.post('/v1/tools', transfer)).status, 201);
      t.equal(
        (await client.post('/v1/tools', { ...transfer, name: 'to_desk_leave', use_agent_phone_number: false })).status,
        201,
      );
      const list = await client.get('/v1/tools');
      const byName = Object.fromEntries(list.body.tools.map((x: { name: string }) => [x.name, x]));
      t.match(byName.to_desk, {
        keep_listening: true,
        use_agent_phone_number: true,
        uninterruptible: true,
        detect_voicemail: false,
        dtmf: null,
        dynamic_dtmf: false,
        post_transfer_message: null,
        on_transfer_no_answer: 'return_to_assistant',
        parameters: [],
      });
      t.match(byName.to_desk_leave, { keep_listening: false, use_agent_phone_number: false });
      const stored = await toolsByNames(server.sql, server.projectId, ['to_desk', 'get_weather', 'missing']);
      t.same(
        stored.map((r) => r.name),
        ['get_weather', 'to_desk'],
        'a conversation resolves the tools its agent names',
      );
      t.equal(stored[1].definition.keep_listening, true, 'keep_listening is stored as resolved at create');
    });

    t.test('400 with param_errors for each broken rule', async (t) => {
      const cases: [string, unknown, string][] = [
        ['snake_case name', { ...webhook, name: 'GetWeather' }, 'name'],
        ['type enum', { ...webhook, name: 'x1', type: 'custom_sql' }, 'type'],
        ['execution_mode required', { ...transfer, name: 'x2', execution_mode: undefined }, 'execution_mode'],
        ['webhook needs endpoint_url', { ...webhook, name: 'x3', endpoint_url: undefined }, 'endpoint_url'],
        [
          'context needs context',
          { name: 'x4', description: 'd', type: 'custom_context', execution_mode: 'sync' },
          'context',
        ],
        [
          'POST parameters need location',
          {
            ...webhook,
            name: 'x5',
            endpoint_url: 'https://api.example.com/w',
            parameters: [{ type: 'string', name: 'a' }],
          },
          'parameters.0.location',
        ],
        [
          'websocket parameters take no location',
          {
            name: 'x6',
            description: 'd',
            type: 'custom_websocket',
            execution_mode: 'sync',
            parameters: [{ type: 'string', name: 'a', location: 'request_body' }],
          },
          'parameters.0.location',
        ],
        [
          'array parameters exclude parameter_locations',
          { ...webhook, name: 'x7', parameter_locations: { city: 'url_path' } },
          'parameter_locations',
        ],
        [
          'reserved name',
          {
            name: 'x8',
            description: 'd',
            type: 'custom_websocket',
            execution_mode: 'sync',
            parameters: [{ type: 'string', name: 'conversation_id' }],
          },
          'parameters.0.name',
        ],
        [
          'built-in takes no parameters',
          {
            name: 'x9',
            description: 'd',
            type: 'built_in_keypad_input',
            execution_mode: 'sync',
            parameters: [{ type: 'string', name: 'a' }],
          },
          'parameters',
        ],
        [
          'keep_listening false needs use_agent_phone_number false',
          { ...transfer, name: 'x10', keep_listening: false },
          'keep_listening',
        ],
        [
          'detect_voicemail needs the agent number',
          { ...transfer, name: 'x11', use_agent_phone_number: false, keep_listening: true, detect_voicemail: true },
          'detect_voicemail',
        ],
        [
          'post_transfer_message null when leaving',
          { ...transfer, name: 'x12', use_agent_phone_number: false, post_transfer_message: 'hi' },
          'post_transfer_message',
        ],
        [
          'keep_retrying needs a bridge',
          { ...transfer, name: 'x13', use_agent_phone_number: false, on_transfer_no_answer: 'keep_retrying' },
          'on_transfer_no_answer',
        ],
        [
          'wait_for_response only async',
          {
            name: 'x14',
            description: 'd',
            type: 'custom_websocket',
            execution_mode: 'sync',
            wait_for_response: true,
            allow_tool_chaining: false,
          },
          'wait_for_response',
        ],
        [
          'allow_tool_chaining on a transfer',
          { ...transfer, name: 'x15', allow_tool_chaining: true },
          'allow_tool_chaining',
        ],
        [
          'speech_before_tool_call on a webhook',
          { ...webhook, name: 'x16', speech_before_tool_call: 'required' },
          'speech_before_tool_call',
        ],
        [
          'respond_after_sec on keypad',
          {
            name: 'x17',
            description: 'd',
            type: 'built_in_keypad_input',
            execution_mode: 'sync',
            respond_after_sec: 3,
          },
          'respond_after_sec',
        ],
        [
          'uninterruptible on async webhook',
          { ...webhook, name: 'x18', execution_mode: 'async', uninterruptible: true },
          'uninterruptible',
        ],
        [
          'placeholder in host',
          { ...webhook, name: 'x19', endpoint_url: 'https://{city}.example.com/w' },
          'endpoint_url',
        ],
        [
          'placeholder without url_path parameter',
          { ...webhook, name: 'x20', endpoint_url: 'https://api.example.com/w/{zip}' },
          'endpoint_url',
        ],
        [
          'private endpoint',
          { ...webhook, name: 'x21', endpoint_url: 'https://127.0.0.1/weather/{city}' },
          'endpoint_url',
        ],
        [
          'plain http endpoint',
          { ...webhook, name: 'x22', endpoint_url: 'http://api.example.com/weather/{city}' },
          'endpoint_url',
        ],
        [
          'credentials in endpoint',
          { ...webhook, name: 'x23', endpoint_url: 'https://u:p@api.example.com/weather/{city}' },
          'endpoint_url',
        ],
        [
          'depth over 5',
          {
            name: 'x24',
            description: 'd',
            type: 'custom_websocket',
            execution_mode: 'sync',
            parameters: {
              type: 'object',
              properties: {
                a: {
                  type: 'object',
                  properties: {
                    b: {
                      type: 'object',
                      properties: {
                        c: {
                          type: 'object',
                          properties: { d: { type: 'object', properties: { e: { type: 'string' } } } },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
          'parameters.properties.a',
        ],
        [
          'agents_to_transfer_to required',
          { name: 'x25', description: 'd', type: 'built_in_transfer_to_agent', execution_mode: 'sync' },
          'agents_to_transfer_to',
        ],
        [
          'agents_to_transfer_to in the project',
          {
            name: 'x26',
            description: 'd',
            type: 'built_in_transfer_to_agent',
            execution_mode: 'sync',
            agents_to_transfer_to: ['ghost'],
          },
          'agents_to_transfer_to.0',
        ],
        [
          'GET JSON-Schema no request_body',
          {
            ...webhook,
            name: 'x27',
            endpoint_method: 'GET',
            endpoint_url: 'https://api.example.com/w',
            parameters: { type: 'object', properties: { a: { type: 'string' } } },
            parameter_locations: { a: 'request_body' },
          },
          'parameter_locations.a',
        ],
      ];
      for (const [what, body, param] of cases) {
        const res = await client.post('/v1/tools', body);
        t.equal(res.status, 400, what);
        t.ok(
          param in (res.body.param_errors ?? {}),
          `${what}: param_errors has ${param} (${JSON.stringify(res.body.param_errors)})`,
        );
        t.type(res.body.error?.message, 'string', what);
      }
      t.equal((await client.get('/v1/tools/x1')).status, 404, 'nothing was created by a refused request');
    });

    t.test('transfer to agents of the same project', async (t) => {
      t.equal((await client.put('/v1/agents/upsert', { name: 'sales' })).status, 200);
      const ok = await client.post('/v1/tools', {
        name: 'to_sales',
        description: 'd',
        type: 'built_in_transfer_to_agent',
        execution_mode: 'sync',
        agents_to_transfer_to: ['sales'],
      });
      t.equal(ok.status, 201);
      const otherProject = await client.post('/v1/tools?project=other-project', {
        name: 'to_sales_2',
        description: 'd',
        type: 'built_in_transfer_to_agent',
        execution_mode: 'sync',
        agents_to_transfer_to: ['sales'],
      });
      t.equal(otherProject.status, 400);
      t.ok('agents_to_transfer_to.0' in otherProject.body.param_errors);
    });

    t.test('get by name and id, update merges and re-validates, delete', async (t) => {
      const byName = await client.get('/v1/tools/get_weather');
      t.equal(byName.status, 200);
      const id = byName.body.tool.id;
      t.same((await client.get(`/v1/tools/${id}`)).body, byName.body);
      const upd = await client.patch('/v1/tools/get_weather', {
        description: 'Current weather',
        endpoint_timeout_ms: 2000,
      });
      t.equal(upd.status, 200);
      t.match(upd.body, {
        success: true,
        tool: { description: 'Current weather', endpoint_timeout_ms: 2000, endpoint_method: 'POST' },
      });
      t.same(upd.body.tool.parameters, webhook.parameters);
      const broken = await client.patch('/v1/tools/get_weather', {
        endpoint_method: 'GET',
        parameters: [{ type: 'string', name: 'a', location: 'request_body' }],
      });
      t.equal(broken.status, 400);
      t.ok('parameters.0.location' in broken.body.param_errors);
      const typeChange = await client.patch('/v1/tools/get_weather', { type: 'custom_websocket' });
      t.equal(typeChange.status, 400);
      t.ok('type' in typeChange.body.param_errors);
      const rename = await client.patch('/v1/tools/get_weather', { name: 'forecast' });
      t.equal(rename.status, 409);
      const renamed = await client.patch(`/v1/tools/${id}`, { name: 'weather_now' });
      t.equal(renamed.status, 200);
      t.equal((await client.get('/v1/tools/weather_now')).body.tool.description, 'Current weather');
      const stored = (await toolByName(server.sql, server.projectId, 'weather_now'))!;
      const edited = { ...stored.definition, description: 'edited' };
      t.equal(
        await updateTool(server.sql, id, { ...stored.definition, description: 'an older read' }, edited),
        'stale',
        'an update from a stale read is refused',
      );
      t.equal(await updateTool(server.sql, id, stored.definition, edited), 'ok');
      t.equal((await client.get('/v1/tools/weather_now')).body.tool.description, 'edited');
      const del = await client.delete('/v1/tools/weather_now');
      t.equal(del.status, 200);
      t.same(del.body, { success: true });
      t.equal((await client.get('/v1/tools/weather_now')).status, 404);
      t.equal((await client.delete('/v1/tools/weather_now')).status, 404);
    });

    t.test('404 for an unknown project', async (t) => {
      t.equal((await client.get('/v1/tools?project=nope')).status, 404);
      t.equal((await client.post('/v1/tools?project=nope', { ...webhook, name: 'y1' })).status, 404);
    });

    t.test('a session token cannot create tools (403); 401 without credentials', async (t) => {
      const token = await client.post('/v1/auth/session_token', {});
      t.equal(token.status, 200);
      const res = await client.post('/v1/tools', { ...webhook, name: 'by_token' }, { key: token.body.session_token });
      t.equal(res.status, 403);
      t.type(res.body.error.message, 'string');
      t.equal((await client.post('/v1/tools', { ...webhook, name: 'anon' }, { key: null })).status, 401);
    });

    t.test('tools of another organization: 403 by id', async (t) => {
      const other = await createWorkspace(server.sql, `tools-other-${db}`);
      const otherClient = api({ url: server.url, apiKey: other.apiKey });
      const created = await otherClient.post('/v1/tools', { ...webhook, name: 'their_tool' });
      t.equal(created.status, 201);
      t.equal((await client.get(`/v1/tools/${created.body.id}`)).status, 403);
      t.equal((await client.delete(`/v1/tools/${created.body.id}`)).status, 403);
      t.equal((await client.patch(`/v1/tools/${created.body.id}`, { description: 'x' })).status, 403);
      t.equal((await client.get('/v1/tools/their_tool')).status, 404, 'by name it is looked up in our own project');
      const theirs = await otherClient.get('/v1/tools');
      t.same(
        theirs.body.tools.map((x: { name: string }) => x.name),
        ['their_tool'],
      );
    });
  });

  t.test(`tools on ${db} with PARLEY_ALLOW_PRIVATE_ENDPOINTS=1`, { timeout: 120_000 }, async (t) => {
    const server = await startTestServer({ db, env: { PARLEY_ALLOW_PRIVATE_ENDPOINTS: '1' } });
    t.teardown(() => server.close());
    const client = api(server);
    const local = await client.post('/v1/tools', { ...webhook, endpoint_url: 'https://127.0.0.1:8443/weather/{city}' });
    t.equal(local.status, 201, 'a loopback endpoint is allowed for local development');
    const plain = await client.post('/v1/tools', {
      ...webhook,
      name: 'plain',
      endpoint_url: 'http://127.0.0.1:8443/weather/{city}',
    });
    t.equal(plain.status, 400, 'still HTTPS only');
    t.ok('endpoint_url' in plain.body.param_errors);
  });
}
