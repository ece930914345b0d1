import t from 'tap';
import {
  endpointUrlProblem,
  toolCreateBody,
  toolView,
  toStoredDefinition,
  type ToolDefinition,
} from '../../src/schemas/tools.js';

const rules = { PARLEY_ALLOW_PRIVATE_ENDPOINTS: false };
const create = toolCreateBody(rules);

function paths(body: unknown): string[] {
  const r = create.safeParse(body);
  return r.success ? [] : r.error.issues.map((i) => i.path.map(String).join('.'));
}

const webhook = {
  name: 'get_weather',
  description: 'Weather for a city',
  type: 'custom_webhook',
  execution_mode: 'sync',
  endpoint_method: 'POST',
  endpoint_url: 'https://api.example.com/weather',
  parameters: [{ type: 'string', name: 'city', description: 'City', is_required: true, location: 'request_body' }],
};
const transfer = {
  name: 'to_desk',
  description: 'Transfer to the desk',
  type: 'built_in_transfer_to_phone_number',
  execution_mode: 'sync',
  phone_number: '+14155550100',
};
const ws = { name: 'lookup', description: 'Look up', type: 'custom_websocket', execution_mode: 'sync' };
const schemaParams = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
});

t.test('a valid tool of each type parses', async (t) => {
  t.same(paths(webhook), []);
  t.same(paths(transfer), []);
  t.same(paths(ws), []);
  t.same(
    paths({ name: 'faq', description: 'FAQ', type: 'custom_context', execution_mode: 'sync', context: 'Open 9 to 5.' }),
    [],
  );
  t.same(
    paths({
      name: 'to_sales',
      description: 'd',
      type: 'built_in_transfer_to_agent',
      execution_mode: 'sync',
      agents_to_transfer_to: ['sales'],
    }),
    [],
  );
  t.same(
    paths({
      name: 'bye',
      description: 'd',
      type: 'built_in_natural_conversation_ending',
      execution_mode: 'sync',
      speech_before_tool_call: 'required',
    }),
    [],
  );
  t.same(paths({ name: 'keys', description: 'd', type: 'built_in_keypad_input', execution_mode: 'async' }), []);
  t.same(
    paths({
      name: 'quiet',
      description: 'd',
      type: 'built_in_choose_not_to_respond',
      execution_mode: 'sync',
      respond_after_sec: 4.5,
    }),
    [],
  );
});

t.test('name is snake_case and required fields are required', async (t) => {
  t.same(paths({ ...webhook, name: 'GetWeather' }), ['name']);
  t.same(paths({ ...webhook, name: 'get-weather' }), ['name']);
  t.same(paths({ type: 'custom_websocket' }), ['name', 'description', 'execution_mode']);
  t.same(paths({ ...ws, type: 'custom_sql' }), ['type']);
});

t.test('type-required fields: webhook endpoint, context, agents to transfer to', async (t) => {
  const { endpoint_method: _m, endpoint_url: _u, ...bare } = webhook;
  t.same(paths(bare), ['endpoint_method', 'endpoint_url']);
  t.same(paths({ name: 'faq', description: 'd', type: 'custom_context', execution_mode: 'sync' }), ['context']);
  t.same(paths({ name: 'x', description: 'd', type: 'built_in_transfer_to_agent', execution_mode: 'sync' }), [
    'agents_to_transfer_to',
  ]);
  t.same(
    paths({
      name: 'x',
      description: 'd',
      type: 'built_in_transfer_to_agent',
      execution_mode: 'sync',
      agents_to_transfer_to: [],
    }),
    ['agents_to_transfer_to'],
  );
});

t.test('rule 1: array parameters are flat definitions with known types', async (t) => {
  t.same(paths({ ...ws, parameters: [{ type: 'date', name: 'day' }] }), ['parameters']);
  t.same(paths({ ...ws, parameters: [{ type: 'string', name: 'a b' }] }), ['parameters.0.name']);
  t.same(
    paths({
      ...ws,
      parameters: [
        { type: 'string', name: 'a' },
        { type: 'integer', name: 'a' },
      ],
    }),
    ['parameters.1.name'],
  );
});

t.test('rule 2: POST webhook parameters need a location; GET defaults to query_string and has no body', async (t) => {
  t.same(paths({ ...webhook, parameters: [{ type: 'string', name: 'city' }] }), ['parameters.0.location']);
  t.same(paths({ ...webhook, endpoint_method: 'GET', parameters: [{ type: 'string', name: 'city' }] }), []);
  t.same(
    paths({
      ...webhook,
      endpoint_method: 'GET',
      parameters: [{ type: 'string', name: 'city', location: 'request_body' }],
    }),
    ['parameters.0.location'],
  );
});

t.test('rule 3: websocket and transfer parameters take no location', async (t) => {
  t.same(paths({ ...ws, parameters: [{ type: 'string', name: 'q', location: 'query_string' }] }), [
    'parameters.0.location',
  ]);
  t.same(paths({ ...transfer, parameters: [{ type: 'string', name: 'reason', location: 'request_body' }] }), [
    'parameters.0.location',
  ]);
  t.same(paths({ ...transfer, parameters: [{ type: 'string', name: 'reason' }] }), []);
});

t.test('rule 4: an array of parameters excludes parameter_locations', async (t) => {
  t.same(paths({ ...webhook, parameter_locations: { city: 'request_body' } }), ['parameter_locations']);
});

t.test('rule 5: the JSON-Schema form', async (t) => {
  const ok = {
    ...ws,
    parameters: schemaParams({ q: { type: 'string', enum: ['a', 'b'] }, n: { type: 'integer' } }, ['q']),
  };
  t.same(paths(ok), []);
  t.same(paths({ ...ws, parameters: { type: 'array', properties: {} } }), ['parameters']);
  t.same(paths({ ...ws, parameters: { type: 'object' } }), ['parameters']);
  t.same(paths({ ...ws, parameters: schemaParams({ q: { type: 'string' } }, ['missing']) }), ['parameters.required.0']);
  t.same(paths({ ...ws, parameters: { ...schemaParams({}), additionalProperties: true } }), ['parameters']);
  t.same(paths({ ...ws, parameters: schemaParams({ n: { type: 'integer', enum: ['1'] } }) }), [
    'parameters.properties.n.enum',
  ]);
  t.same(paths({ ...ws, parameters: schemaParams({ q: { type: 'string', format: 'email' } }) }), [
    'parameters.properties.q',
  ]);
  const nestedRequired = schemaParams({
    o: { type: 'object', properties: { a: { type: 'string' } }, required: ['b'] },
  });
  t.same(paths({ ...ws, parameters: nestedRequired }), ['parameters.properties.o.required.0']);
  t.same(paths({ ...ws, parameters: schemaParams({ u: { anyOf: [{ type: 'string' }, { type: 'null' }] } }) }), []);
});

t.test('rule 5: JSON-Schema nesting depth is at most 5', async (t) => {
  // parameters (1) > a (2) > b (3) > c (4) > d (5): allowed; one more level is not.
  const level = (inner: unknown) => ({ type: 'object', properties: { x: inner } });
  const depth5 = schemaParams({ a: level(level(level({ type: 'string' }))) });
  t.same(paths({ ...ws, parameters: depth5 }), []);
  const depth6 = schemaParams({ a: level(level(level(level({ type: 'string' })))) });
  t.same(paths({ ...ws, parameters: depth6 }), ['parameters.properties.a']);
  const arrays = schemaParams({
    a: {
      type: 'array',
      items: { type: 'array', items: { type: 'array', items: { type: 'array', items: { type: 'string' } } } },
    },
  });
  t.same(paths({ ...ws, parameters: arrays }), ['parameters.properties.a']);
});

t.test('rule 6: parameter_locations with JSON-Schema webhook parameters', async (t) => {
  const params = schemaParams({ city: { type: 'string' }, units: { type: 'string' } }, ['city']);
  t.same(
    paths({ ...webhook, parameters: params, parameter_locations: { city: 'request_body', units: 'query_string' } }),
    [],
  );
  t.same(paths({ ...webhook, parameters: params, parameter_locations: { city: 'request_body' } }), [
    'parameter_locations.units',
  ]);
  t.same(
    paths({
      ...webhook,
      parameters: params,
      parameter_locations: { city: 'request_body', units: 'query_string', zip: 'query_string' },
    }),
    ['parameter_locations.zip'],
  );
  t.same(paths({ ...webhook, endpoint_method: 'GET', parameters: params }), []);
  t.same(
    paths({ ...webhook, endpoint_method: 'GET', parameters: params, parameter_locations: { city: 'request_body' } }),
    ['parameter_locations.city'],
  );
  t.same(paths({ ...webhook, parameters: params, parameter_locations: { city: 'nowhere', units: 'query_string' } }), [
    'parameter_locations.city',
  ]);
  t.same(paths({ ...ws, parameters: params, parameter_locations: { city: 'request_body' } }), ['parameter_locations']);
});

t.test('rule 7: reserved parameter names, in both forms', async (t) => {
  for (const name of [
    'call_info',
    'conversation_id',
    'from_phone_number',
    'pre_tool_text',
    'to_phone_number',
    'telephony_call_sid',
  ]) {
    t.same(paths({ ...ws, parameters: [{ type: 'string', name }] }), ['parameters.0.name'], name);
    t.same(
      paths({ ...ws, parameters: schemaParams({ [name]: { type: 'string' } }) }),
      [`parameters.properties.${name}`],
      name,
    );
  }
});

t.test('rule 8: context and non-transfer built-in tools take no parameters', async (t) => {
  const ctx = { name: 'faq', description: 'd', type: 'custom_context', execution_mode: 'sync', context: 'c' };
  t.same(paths({ ...ctx, parameters: [] }), []);
  t.same(paths({ ...ctx, parameters: [{ type: 'string', name: 'q' }] }), ['parameters']);
  t.same(
    paths({
      name: 'bye',
      description: 'd',
      type: 'built_in_natural_conversation_ending',
      execution_mode: 'sync',
      parameters: schemaParams({}),
    }),
    ['parameters'],
  );
});

t.test(
  'endpoint_url: public HTTPS, no credentials, placeholders in path or query filled by required url_path parameters',
  async (t) => {
    t.same(paths({ ...webhook, endpoint_url: 'http://api.example.com/x' }), ['endpoint_url']);
    t.same(paths({ ...webhook, endpoint_url: 'https://u:p@api.example.com/x' }), ['endpoint_url']);
    t.same(paths({ ...webhook, endpoint_url: 'https://192.168.1.10/x' }), ['endpoint_url']);
    t.same(paths({ ...webhook, endpoint_url: 'https://{host}.example.com/x' }), ['endpoint_url']);
    t.same(paths({ ...webhook, endpoint_url: 'https://api.example.com:{port}/x' }), ['endpoint_url']);
    const cityInPath = [{ type: 'string', name: 'city', is_required: true, location: 'url_path' }];
    t.same(paths({ ...webhook, endpoint_url: 'https://api.example.com/weather/{city}', parameters: cityInPath }), []);
    t.same(
      paths({ ...webhook, endpoint_url: 'https://api.example.com/weather?city={city}', parameters: cityInPath }),
      [],
    );
    t.same(paths({ ...webhook, endpoint_url: 'https://api.example.com/weather/{town}', parameters: cityInPath }), [
      'endpoint_url',
      'parameters.0.location',
    ]);
    const optional = [{ type: 'string', name: 'city', is_required: false, location: 'url_path' }];
    t.same(paths({ ...webhook, endpoint_url: 'https://api.example.com/weather/{city}', parameters: optional }), [
      'endpoint_url',
      'parameters.0.location',
    ]);
    t.same(paths({ ...webhook, endpoint_url: 'https://api.example.com/weather/{city}' }), ['endpoint_url']);
    const jsonForm = schemaParams({ city: { type: 'string' } }, ['city']);
    t.same(
      paths({
        ...webhook,
        endpoint_url: 'https://api.example.com/w/{city}',
        parameters: jsonForm,
        parameter_locations: { city: 'url_path' },
      }),
      [],
    );
    t.equal(endpointUrlProblem('https://api.example.com/a/{b', rules), 'has an unbalanced { or } placeholder brace');
    t.equal(endpointUrlProblem('https://127.0.0.1:8443/{a}', { PARLEY_ALLOW_PRIVATE_ENDPOINTS: true }), null);
  },
);

t.test('per-type fields are refused on other types', async (t) => {
  t.same(paths({ ...ws, keep_listening: true }), ['keep_listening']);
  t.same(paths({ ...ws, endpoint_url: 'https://api.example.com' }), ['endpoint_url']);
  t.same(paths({ ...transfer, context: 'x' }), ['context']);
  t.same(paths({ ...transfer, speech_before_tool_call: 'optional' }), ['speech_before_tool_call']);
  t.same(paths({ ...ws, respond_after_sec: 2 }), ['respond_after_sec']);
  t.same(paths({ ...transfer, allow_tool_chaining: false }), ['allow_tool_chaining']);
  t.same(paths({ ...transfer, agents_to_transfer_to: ['a'] }), ['agents_to_transfer_to']);
  t.same(paths({ ...webhook, tool_call_output_timeout_ms: 100 }), ['tool_call_output_timeout_ms']);
  t.same(paths({ ...ws, wait_for_speech_before_tool_call: true, forbid_tool_call_after_speech: true }), []);
  const ctx = { name: 'faq', description: 'd', type: 'custom_context', execution_mode: 'sync', context: 'c' };
  t.same(paths({ ...ctx, forbid_tool_call_after_speech: true }), ['forbid_tool_call_after_speech']);
  t.same(paths({ ...ctx, forbid_speech_after_tool_call: true, allow_tool_chaining: false }), []);
});

t.test(
  'keep_listening false requires use_agent_phone_number false, no voicemail detection, no post-transfer message',
  async (t) => {
    t.same(paths({ ...transfer, keep_listening: false }), ['keep_listening']);
    t.same(paths({ ...transfer, keep_listening: false, use_agent_phone_number: false }), []);
    t.same(
      paths({ ...transfer, use_agent_phone_number: false }),
      [],
      'keep_listening defaults to use_agent_phone_number',
    );
    t.same(paths({ ...transfer, use_agent_phone_number: false, post_transfer_message: 'Hi' }), [
      'post_transfer_message',
    ]);
    t.same(
      paths({ ...transfer, keep_listening: true, use_agent_phone_number: false, post_transfer_message: 'Hi' }),
      [],
    );
  },
);

t.test('detect_voicemail requires use_agent_phone_number', async (t) => {
  t.same(paths({ ...transfer, detect_voicemail: true }), []);
  t.same(paths({ ...transfer, detect_voicemail: true, use_agent_phone_number: false, keep_listening: true }), [
    'detect_voicemail',
  ]);
});

t.test('on_transfer_no_answer keep_retrying needs a bridged transfer', async (t) => {
  t.same(paths({ ...transfer, on_transfer_no_answer: 'keep_retrying' }), []);
  t.same(
    paths({
      ...transfer,
      on_transfer_no_answer: 'keep_retrying',
      use_agent_phone_number: false,
      keep_listening: false,
    }),
    ['on_transfer_no_answer'],
  );
});

t.test('wait_for_response only on async remote tools and not with tool chaining', async (t) => {
  t.same(paths({ ...ws, execution_mode: 'async', wait_for_response: true, allow_tool_chaining: false }), []);
  t.same(paths({ ...ws, execution_mode: 'async', wait_for_response: true }), ['wait_for_response']);
  t.same(paths({ ...ws, wait_for_response: false }), ['wait_for_response']);
  const ctx = { name: 'faq', description: 'd', type: 'custom_context', execution_mode: 'async', context: 'c' };
  t.same(paths({ ...ctx, wait_for_response: false }), ['wait_for_response']);
});

t.test('uninterruptible only on sync remote tools and phone transfers', async (t) => {
  t.same(paths({ ...ws, uninterruptible: true }), []);
  t.same(paths({ ...ws, execution_mode: 'async', uninterruptible: true }), ['uninterruptible']);
  t.same(paths({ ...transfer, uninterruptible: false }), []);
  t.same(
    paths({
      name: 'keys',
      description: 'd',
      type: 'built_in_keypad_input',
      execution_mode: 'sync',
      uninterruptible: true,
    }),
    ['uninterruptible'],
  );
});

t.test('speech_before_tool_call and respond_after_sec values', async (t) => {
  t.same(
    paths({
      name: 'k',
      description: 'd',
      type: 'built_in_keypad_input',
      execution_mode: 'sync',
      speech_before_tool_call: 'maybe',
    }),
    ['speech_before_tool_call'],
  );
  t.same(
    paths({
      name: 'q',
      description: 'd',
      type: 'built_in_choose_not_to_respond',
      execution_mode: 'sync',
      respond_after_sec: null,
    }),
    [],
  );
  t.same(
    paths({
      name: 'q',
      description: 'd',
      type: 'built_in_choose_not_to_respond',
      execution_mode: 'sync',
      respond_after_sec: -1,
    }),
    ['respond_after_sec'],
  );
});

t.test('phone transfer fields: E.164 target, DTMF digits', async (t) => {
  t.same(paths({ ...transfer, phone_number: '555-0100' }), ['phone_number']);
  t.same(paths({ ...transfer, phone_number: null, dtmf: '12#w3' }), []);
  t.same(paths({ ...transfer, dtmf: 'call me' }), ['dtmf']);
});

t.test('the read view: parameters as defined, type defaults, keep_listening fixed at create', async (t) => {
  const project = { id: 'proj_1', name: 'main' };
  const def = create.parse({ ...transfer, use_agent_phone_number: false }) as ToolDefinition;
  const view = toolView('tool_1', project, toStoredDefinition(def));
  t.equal(view.keep_listening, false);
  t.equal(view.uninterruptible, true);
  t.equal(view.on_transfer_no_answer, 'return_to_assistant');
  t.equal(view.dtmf, null);
  t.same(view.parameters, []);
  t.same(view.project, project);
  const hook = toolView(
    'tool_2',
    project,
    create.parse({
      ...webhook,
      endpoint_method: 'GET',
      parameters: [{ type: 'string', name: 'city' }],
    }) as ToolDefinition,
  );
  t.same(hook.parameters, [{ type: 'string', name: 'city' }], 'location default is not written into the definition');
  t.equal(hook.endpoint_timeout_ms, 5000);
  t.equal(hook.allow_tool_chaining, true);
  t.equal(hook.uninterruptible, false);
  t.notOk('parameter_locations' in hook);
  t.notOk('keep_listening' in hook);
  const json = schemaParams({ city: { type: 'string' } }, ['city']);
  const hook2 = toolView(
    'tool_3',
    project,
    create.parse({ ...webhook, parameters: json, parameter_locations: { city: 'request_body' } }) as ToolDefinition,
  );
  t.same(hook2.parameters, json);
  t.same(hook2.parameter_locations, { city: 'request_body' });
  const sock = toolView('tool_4', project, create.parse(ws) as ToolDefinition);
  t.equal(sock.tool_call_output_timeout_ms, 5000);
});
