// What the control plane refuses at its edge, over real HTTP on both databases: NUL and unpaired surrogates in any
// body text (a value or a key), query or path parameter are a 400 naming the field and nothing is written; a tool
// schema nested 1,000 deep is a 400, not a stack overflow; URLs that only look public (IPv6 forms embedding
// 127.0.0.1, empty labels, numeric IPv4 forms) are refused when saved; Node's own client errors (431 and the
// router's) answer with the API's error body.
import { connect } from 'node:net';
import t from 'tap';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';

t.setTimeout(300_000);

const UNSAFE = 'must not contain NUL characters or unpaired surrogates';
const UNSAFE_KEY = 'a key must not contain NUL characters or unpaired surrogates';

/** A JSON-Schema property nested `levels` deep (each level an object with one property). */
function nested(levels: number): Record<string, unknown> {
  let p: Record<string, unknown> = { type: 'string' };
  for (let i = 1; i < levels; i++) p = { type: 'object', properties: { a: p } };
  return p;
}

const webhook = {
  name: 'get_weather',
  description: 'Weather for a city',
  type: 'custom_webhook',
  execution_mode: 'sync',
  endpoint_method: 'POST',
  endpoint_url: 'https://api.example.com/weather',
  parameters: [],
};

for (const db of DB_KINDS) {
  t.test(`input guards on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);

    t.test('NUL or an unpaired surrogate in a body: 400 naming the field, nothing written', async (t) => {
      const cases: [string, () => Promise<{ status: number; body: any }>, string, string][] = [
        [
          'agent upsert system_prompt (NUL)',
          () => client.put('/v1/agents/upsert', { name: 'sales', system_prompt: 'Be kind.\u0000' }),
          'system_prompt',
          UNSAFE,
        ],
        [
          'agent upsert system_prompt (lone surrogate)',
          () => client.put('/v1/agents/upsert', { name: 'sales', system_prompt: 'Be kind.\ud800' }),
          'system_prompt',
          UNSAFE,
        ],
        [
          'agent upsert name (low surrogate alone)',
          () => client.put('/v1/agents/upsert', { name: 'sa\udc00les' }),
          'name',
          UNSAFE,
        ],
        [
          'tool description',
          () => client.post('/v1/tools', { ...webhook, description: 'Weather\u0000' }),
          'description',
          UNSAFE,
        ],
        [
          'tool header name',
          () => client.post('/v1/tools', { ...webhook, endpoint_headers: { ['x-k\u0000ey']: 'v' } }),
          'endpoint_headers',
          UNSAFE_KEY,
        ],
        [
          'tool header value',
          () => client.post('/v1/tools', { ...webhook, endpoint_headers: { 'x-key': 'v\u0000' } }),
          'endpoint_headers.x-key',
          UNSAFE,
        ],
        [
          'extraction schema prompt',
          () => client.post('/v1/extraction_schemas', { name: 'orders', prompt: 'Extract\u0000', fields: [] }),
          'prompt',
          UNSAFE,
        ],
        [
          'extraction schema field description',
          () =>
            client.post('/v1/extraction_schemas', {
              name: 'orders',
              prompt: 'Extract',
              fields: [{ name: 'id', type: 'string', description: 'the id\ud800' }],
            }),
          'fields.0.description',
          UNSAFE,
        ],
        [
          'workspace logo_url',
          () => client.patch('/v1/workspace', { logo_url: 'https://cdn.example.com/lo\u0000go.png' }),
          'logo_url',
          UNSAFE,
        ],
        ['workspace, a key', () => client.patch('/v1/workspace', { ['logo\u0000']: null }), 'body', UNSAFE_KEY],
        ['project name', () => client.post('/v1/projects', { name: 'sales\u0000' }), 'name', UNSAFE],
      ];
      for (const [what, send, field, message] of cases) {
        const res = await send();
        t.equal(res.status, 400, `${what}: 400`);
        t.same(
          res.body,
          { error: { message: `invalid parameter ${field}: ${message}` }, param_errors: { [field]: message } },
          `${what}: names ${field}`,
        );
      }
      t.equal((await client.get('/v1/agents')).body.agents.length, 0, 'no agent written');
      t.same((await client.get('/v1/tools')).body.tools, [], 'no tool written');
      t.same((await client.get('/v1/extraction_schemas')).body.extraction_schemas, [], 'no extraction schema written');
      t.equal((await client.get('/v1/workspace')).body.workspace.logo_url, null, 'the workspace unchanged');
      t.same(
        (await client.get('/v1/projects')).body.projects.map((p: { name: string }) => p.name),
        ['main'],
        'no project written',
      );
    });

    t.test('NUL in a query or path parameter: 400 naming it', async (t) => {
      const byPath = await client.get('/v1/agents/sa%00les');
      t.equal(byPath.status, 400);
      t.same(byPath.body.param_errors, { nameOrId: UNSAFE });
      const byQuery = await client.get('/v1/conversations?external_id=crm%00');
      t.equal(byQuery.status, 400);
      t.same(byQuery.body.param_errors, { external_id: UNSAFE });
      t.equal(
        (await client.get('/v1/agents/sales', undefined, { key: null })).status,
        401,
        'authentication still comes first',
      );
    });

    t.test('tool schemas: nested 1,000 deep is a 400, six levels the rule-5 error', async (t) => {
      const deep = await client.post('/v1/tools', {
        ...webhook,
        type: 'custom_websocket',
        endpoint_method: undefined,
        endpoint_url: undefined,
        parameters: { type: 'object', properties: { a: nested(1000) } },
      });
      t.equal(deep.status, 400);
      t.same(Object.keys(deep.body.param_errors), ['parameters'], 'names the field');
      const six = await client.post('/v1/tools', {
        name: 'six',
        description: 'd',
        type: 'custom_websocket',
        execution_mode: 'sync',
        parameters: { type: 'object', properties: { a: nested(5) } },
      });
      t.equal(six.status, 400);
      t.same(six.body.param_errors, { 'parameters.properties.a': 'nesting depth must be at most 5' });
      const five = await client.post('/v1/tools', {
        name: 'five',
        description: 'd',
        type: 'custom_websocket',
        execution_mode: 'sync',
        parameters: { type: 'object', properties: { a: nested(4) } },
      });
      t.equal(five.status, 201, 'five levels are allowed');
      const deepJson = await client.post('/v1/conversations/outbound_call', {
        to_phone_number: '+14155550123',
        call_info: nested(200),
        dry_run: true,
      });
      t.equal(deepJson.status, 400, 'any body nested past the limit');
      t.same(Object.keys(deepJson.body.param_errors), ['call_info']);
    });

    t.test('URLs that only look public are refused when saved', async (t) => {
      const texts = [
        'https://[::127.0.0.1]/hook',
        'https://[::ffff:0:127.0.0.1]/hook',
        'https://[64:ff9b::127.0.0.1]/hook',
        'https://[2002:7f00:1::]/hook',
        'https://localhost../hook',
        'https://2130706433/hook',
        'https://0x7f.1/hook',
        'https://127.1/hook',
      ];
      for (const url of texts) {
        const tool = await client.post('/v1/tools', { ...webhook, name: 'probe', endpoint_url: url });
        t.equal(tool.status, 400, `tool endpoint_url ${url}: 400`);
        t.ok(tool.body.param_errors?.endpoint_url, `${url}: names endpoint_url`);
        const agent = await client.put('/v1/agents/upsert', { name: 'probe', configuration_endpoint: { url } });
        t.equal(agent.status, 400, `agent configuration_endpoint ${url}: 400`);
        t.ok(agent.body.param_errors?.['configuration_endpoint.url'], `${url}: names configuration_endpoint.url`);
      }
      t.equal((await client.get('/v1/tools/probe')).status, 404, 'no tool saved');
    });

    t.test("431 and the router's client errors answer with the API's error body", async (t) => {
      const big = await client.get('/v1/agents', undefined, { headers: { 'x-filler': 'x'.repeat(64 * 1024) } });
      t.equal(big.status, 431);
      t.same(big.body, {
        error: { message: 'request header fields too large', code: 'request_header_fields_too_large' },
      });
      const malformed = await rawRequest(server.url, 'GET /v1/agents HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
      t.match(malformed, /^HTTP\/1\.1 400 /);
      t.match(malformed, /\{"error":\{"message":"malformed HTTP request","code":"bad_request"\}\}$/);
      const badEscape = await client.get('/v1/agents/%zz');
      t.equal(badEscape.status, 400);
      t.match(badEscape.body, { error: { message: String, code: 'fst_err_bad_url' } });
    });
  });
}

/** Sends raw bytes to the server and reads until it closes. */
function rawRequest(base: string, text: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(text));
    let got = '';
    socket.on('data', (d) => (got += d));
    socket.on('end', () => resolve(got));
    socket.on('error', reject);
  });
}
