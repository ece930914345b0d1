// Response serialization: the compiled serializer writes exactly what the zod type provider wrote (zod's output,
// JSON.stringify-ed): the schema's key order, undeclared keys left out, nullable objects, both branches of a
// discriminated union, records, optional keys absent or present, strings that need escaping. A schema JSON Schema
// cannot state keeps zod's serializer.
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import t from 'tap';
import { z } from 'zod';
import { responseJsonSchema, serializerCompiler } from '../../src/api/serializer.js';
import { agentDefaults, agentRecord, type AgentRecord } from '../../src/schemas/agents.js';

const agentBody = z.object({ agent: agentRecord });

/** Both serializers of `schema`, as Fastify would compile them for a route's 200 answer. */
function both(schema: z.ZodType): { compiled: (d: unknown) => string; zod: (d: unknown) => string } {
  const route = { schema, method: 'GET', url: '/v1/test', httpStatus: '200' };
  return {
    compiled: serializerCompiler(route) as (d: unknown) => string,
    zod: zodSerializerCompiler(route) as (d: unknown) => string,
  };
}

function record(over: Partial<AgentRecord> = {}): AgentRecord {
  const c = agentDefaults();
  return {
    id: 'agent_7c9e6679-7425-40de-944b-e07fc1f90ae7',
    name: 'support',
    phone_numbers: [],
    project: { id: 'proj_1', name: 'main' },
    ...c,
    slug: null,
    phone_number: null,
    custom_phone_numbers: [],
    custom_phone_number: null,
    ...over,
  } as AgentRecord;
}

t.test('agent records are written as zod wrote them', async (t) => {
  const { compiled, zod } = both(agentBody);
  const cases: [string, unknown][] = [
    ['the upsert defaults', { agent: record() }],
    [
      'every nullable set, numbers, the other union branch, records with optional keys',
      {
        agent: record({
          phone_numbers: ['+14155550001', '+14155550002'],
          phone_number: 'custom',
          custom_phone_numbers: ['+14155550002'],
          custom_phone_number: '+14155550002',
          slug: 'support-line',
          background_noise: 'office',
          background_noise_level: 0.25,
          audio_speed: 1.2,
          welcome_message: 'Hello "there"\n\u2028 \u{1F600} \ud800 tab\t back\\slash',
          no_input_poke_sec: 15,
          data_retention_policy: { zero_data_retention: true },
          outbound_number_pool: { active: ['+14155550003'], blocked: [] },
          configuration_endpoint: {
            url: 'https://config.example.com/agent',
            headers: { 'x-token': 'abc' },
            timeout_ms: 3000,
          },
          template_variables: {
            customer: { default_value: 'friend' },
            product: { default_value: 'widget', is_boosted_keyword: true },
          },
          built_in_tool_configs: { web_search: { max_results: 3, nested: { a: [1, null, 'x'] } } },
          tasks: [{ name: 'greet', description: 'say hello' }],
          pronunciation_dictionary: [{ word: 'SQL', pronunciation: 'sequel' }],
          vendor_model: 'vendor_v1',
          integrations: [{ account_id: 'acc', account_name: null, action_names: ['send'], app_slug: 'slack' }],
        }),
      },
    ],
    ['a long prompt', { agent: record({ system_prompt: 'You are a helpful assistant. '.repeat(400) }) }],
  ];
  for (const [what, body] of cases) t.equal(compiled(body), zod(body), what);

  // Keys the schema does not declare are left out, at every depth (zod strips them).
  const extra = record() as AgentRecord & { created_at?: Date };
  extra.created_at = new Date(0);
  (extra.project as { org_id?: string }).org_id = 'org_1';
  const out = compiled({ agent: extra, inserted: true });
  t.equal(out, zod({ agent: extra, inserted: true }));
  t.notMatch(out, /created_at|org_id|inserted/);
});

t.test('key order is the schema order, whatever the object order', async (t) => {
  const schema = z.object({
    b: z.string(),
    a: z.number().nullable(),
    c: z.array(z.object({ y: z.boolean(), x: z.string().optional() })),
  });
  const { compiled, zod } = both(schema);
  const body = { c: [{ x: 'x', y: true }, { y: false }], a: null, b: 'b' };
  t.equal(compiled(body), '{"b":"b","a":null,"c":[{"y":true,"x":"x"},{"y":false}]}');
  t.equal(compiled(body), zod(body));
});

t.test('a schema JSON Schema cannot state keeps the zod serializer', async (t) => {
  const transformed = z.object({ at: z.date() });
  t.equal(responseJsonSchema(transformed), null, 'a date has no JSON Schema');
  const { compiled } = both(transformed);
  t.throws(() => compiled({ at: 'not a date' }), 'still validated by zod');
  t.ok(responseJsonSchema(agentBody), 'the agent record has one');
});
