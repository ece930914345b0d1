import t from 'tap';
import { responsesRequestBody } from '../../src/schemas/responses.js';

const schema = responsesRequestBody(5);
const user = { role: 'user', text: 'Hello' };
const params = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const def = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: 'd',
  parameters: params,
  ...extra,
});

/** The issues of a body, as `path -> message`. */
function issues(body: Record<string, unknown>): Record<string, string> {
  const r = schema.safeParse({ system_prompt: 'You help.', ...body });
  const out: Record<string, string> = {};
  for (const issue of r.error?.issues ?? []) out[issue.path.join('.')] = issue.message;
  return out;
}

t.test('a minimal body is valid and takes the defaults', async (t) => {
  const r = schema.parse({ system_prompt: 'You help.', input: [user] });
  t.equal(r.voice_id, 'sabrina');
  t.equal(r.num_responses, 1);
  t.same(r.tools, []);
  t.same(r.tool_definitions, []);
  t.same(r.additional_languages, []);
});

t.test('system_prompt and at least one input item are required', async (t) => {
  t.match(schema.safeParse({ input: [user] }).error?.issues[0]?.path, ['system_prompt']);
  t.match(issues({ input: [] }), { input: /at least one/ });
  t.match(issues({}), { input: /./ });
});

t.test('item forms: user needs text; an unknown form is named', async (t) => {
  t.match(issues({ input: [{ role: 'user' }] }), { 'input.0': /text/ });
  t.match(issues({ input: [{ role: 'system', text: 'x' }] }), { 'input.0': /role: user/ });
  t.match(issues({ input: [{ role: 'user', text: 'x', extra: 1 }] }), { 'input.0': /Unrecognized key/ });
});

t.test('an assistant item carries text, tool_calls or action, not both of the last two', async (t) => {
  t.match(issues({ input: [user, { role: 'assistant', text: '' }] }), {
    'input.1': /must carry text, tool_calls or action/,
  });
  t.same(issues({ input: [user, { role: 'assistant', text: 'Hi!' }] }), {});
  t.same(
    issues({ input: [user, { role: 'assistant', text: '', action: { type: 'assistant_ended_conversation' } }] }),
    {},
  );
  const both = issues({
    input: [
      user,
      {
        role: 'assistant',
        text: '',
        tool_calls: [{ tool_call_id: 'c1', tool: { name: 'x' }, request_body: {} }],
        action: { type: 'dtmf', digits: '1' },
      },
      { type: 'tool_call_output', tool_call_id: 'c1', response_status_code: 200 },
    ],
  });
  t.match(both, { 'input.1.action': /cannot both be present/ });
});

t.test('every tool call is followed immediately by its output', async (t) => {
  const call = (id: string) => ({ tool_call_id: id, tool: { name: 'lookup' }, request_body: { city: 'Oslo' } });
  const out = (id: string) => ({ type: 'tool_call_output', tool_call_id: id, response_body: { ok: true } });
  t.same(
    issues({ input: [user, { role: 'assistant', text: '', tool_calls: [call('a'), call('b')] }, out('b'), out('a')] }),
    {},
  );
  t.match(issues({ input: [user, { role: 'assistant', text: '', tool_calls: [call('a')] }] }), {
    'input.1': /must follow its call/,
  });
  t.match(issues({ input: [user, { role: 'assistant', text: '', tool_calls: [call('a')] }, user, out('a')] }), {
    'input.2': /expected the output of tool call 'a'/,
    'input.3.tool_call_id': /must follow its call immediately/,
  });
  t.match(issues({ input: [user, out('zz')] }), { 'input.1.tool_call_id': /no assistant tool call 'zz'/ });
  t.match(issues({ input: [user, { role: 'assistant', text: '', tool_calls: [call('a')] }, out('a'), out('a')] }), {
    'input.3.tool_call_id': /second output/,
  });
});

t.test('a tool call output records an outcome', async (t) => {
  const base = [user, { role: 'assistant', text: '', tool_calls: [{ tool_call_id: 'a', tool: { name: 'x' } }] }];
  t.match(issues({ input: [...base, { type: 'tool_call_output', tool_call_id: 'a' }] }), {
    'input.2': /must record an outcome/,
  });
  for (const outcome of [
    { timed_out: true },
    { interrupted: false },
    { error_message: 'boom' },
    { response_status_code: 500 },
    { response_body: null },
  ]) {
    t.same(
      issues({ input: [...base, { type: 'tool_call_output', tool_call_id: 'a', ...outcome }] }),
      {},
      JSON.stringify(outcome),
    );
  }
});

t.test('tool_call_ids are unique within the input', async (t) => {
  const item = { role: 'assistant', text: '', tool_calls: [{ tool_call_id: 'a', tool: { name: 'x' } }] };
  const out = { type: 'tool_call_output', tool_call_id: 'a', response_status_code: 200 };
  t.match(issues({ input: [user, item, out, user, item, out] }), { 'input.4.tool_calls.0.tool_call_id': /not unique/ });
});

t.test('an argument may not be in both request_body and query_params', async (t) => {
  const item = {
    role: 'assistant',
    text: '',
    tool_calls: [{ tool_call_id: 'a', tool: { name: 'x' }, request_body: { q: 1 }, query_params: { q: '1' } }],
  };
  t.match(issues({ input: [user, item, { type: 'tool_call_output', tool_call_id: 'a', timed_out: true }] }), {
    'input.1.tool_calls.0.query_params.q': /also in request_body/,
  });
});

t.test('tool names are unique; definitions repeat neither tools nor a built-in name', async (t) => {
  t.match(issues({ input: [user], tools: ['keypad_input', 'keypad_input'] }), { 'tools.1': /listed twice/ });
  t.match(issues({ input: [user], tools: ['keypad_input', { type: 'built_in', name: 'keypad_input' }] }), {
    'tools.1': /listed twice/,
  });
  t.match(issues({ input: [user], tool_definitions: [def('a'), def('a')] }), {
    'tool_definitions.1.name': /defined twice/,
  });
  t.match(
    issues({ input: [user], tools: ['transfer_desk'], project: 'main', tool_definitions: [def('transfer_desk')] }),
    {
      'tool_definitions.0.name': /also named in tools/,
    },
  );
  for (const reserved of ['web_search', 'natural_conversation_ending', 'choose_not_to_respond', 'keypad_input']) {
    t.match(issues({ input: [user], tool_definitions: [def(reserved)] }), {
      'tool_definitions.0.name': /reserved for a built-in/,
    });
  }
});

t.test('built-in references take their own configuration', async (t) => {
  t.same(
    issues({
      input: [user],
      tools: [{ type: 'built_in', name: 'choose_not_to_respond', tool_config: { respond_after_sec: 4 } }],
    }),
    {},
  );
  t.same(
    issues({
      input: [user],
      tools: [{ type: 'built_in', name: 'keypad_input', tool_config: { speech_before_tool_call: 'suppressed' } }],
    }),
    {},
  );
  t.not(
    Object.keys(
      issues({
        input: [user],
        tools: [{ type: 'built_in', name: 'keypad_input', tool_config: { respond_after_sec: 4 } }],
      }),
    ).length,
    0,
  );
  t.match(issues({ input: [user], tools: [{ type: 'built_in', name: 'transfer', tool_config: {} }] }), {
    'tools.0': /name: .*keypad_input/,
  });
  t.match(issues({ input: [user], tools: [42] }), { 'tools.0': /must be a tool name or \{type: built_in/ });
});

t.test('inline parameters follow the JSON-Schema tool rules', async (t) => {
  const bad = (parameters: unknown) =>
    issues({ input: [user], tool_definitions: [{ name: 'f', description: 'd', parameters }] });
  t.match(
    bad([{ name: 'x', type: 'string' }]),
    { 'tool_definitions.0.parameters': /./ },
    'the array form is not accepted',
  );
  t.match(bad({ type: 'object' }), { 'tool_definitions.0.parameters.properties': /./ }, 'properties is required');
  t.match(bad({ ...params, additionalProperties: true }), {
    'tool_definitions.0.parameters.additionalProperties': /./,
  });
  t.match(bad({ ...params, required: ['nope'] }), { 'tool_definitions.0.parameters.required.0': /not in properties/ });
  t.match(bad({ type: 'object', properties: { n: { type: 'integer', enum: ['1'] } } }), {
    'tool_definitions.0.parameters.properties.n.enum': /only allowed on string/,
  });
  t.match(bad({ type: 'object', properties: { n: { type: 'date' } } }), {
    'tool_definitions.0.parameters.properties.n.type': /./,
  });
  t.match(bad({ type: 'object', properties: { conversation_id: { type: 'string' } } }), {
    'tool_definitions.0.parameters.properties.conversation_id': /reserved parameter name/,
  });
  // depth: the top-level object is level 1; 4 nested objects make 5 levels, a 5th makes 6.
  const nest = (levels: number): Record<string, unknown> =>
    levels === 0 ? { type: 'string' } : { type: 'object', properties: { x: nest(levels - 1) } };
  t.same(bad({ type: 'object', properties: { x: nest(3) } }), {}, '5 levels are allowed');
  t.match(bad({ type: 'object', properties: { x: nest(5) } }), {
    'tool_definitions.0.parameters.properties.x.properties.x.properties.x.properties.x.properties.x': /deeper than 5/,
  });
  t.same(
    bad({
      type: 'object',
      properties: {
        tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } },
        v: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      },
    }),
    {},
  );
});

t.test('parameter_locations names parameters', async (t) => {
  t.same(
    issues({ input: [user], tool_definitions: [def('f', { parameter_locations: { city: 'query_string' } })] }),
    {},
  );
  t.match(issues({ input: [user], tool_definitions: [def('f', { parameter_locations: { town: 'query_string' } })] }), {
    'tool_definitions.0.parameter_locations.town': /not a parameter/,
  });
});

t.test('additional_languages must not include default_language', async (t) => {
  t.match(issues({ input: [user], default_language: 'en', additional_languages: ['de', 'en'] }), {
    'additional_languages.1': /must not include default_language/,
  });
  t.same(issues({ input: [user], default_language: 'en', additional_languages: ['de', 'fil'] }), {});
  t.match(issues({ input: [user], additional_languages: ['xx'] }), { 'additional_languages.0': /./ });
});

t.test('num_responses is between 1 and the configured maximum', async (t) => {
  t.same(issues({ input: [user], num_responses: 5 }), {});
  t.match(issues({ input: [user], num_responses: 6 }), { num_responses: /at most 5 \(PARLEY_RESPONSES_MAX\)/ });
  t.match(issues({ input: [user], num_responses: 0 }), { num_responses: /./ });
  t.match(issues({ input: [user], num_responses: 1.5 }), { num_responses: /./ });
  t.same(responsesRequestBody(10).safeParse({ system_prompt: 'x', input: [user], num_responses: 10 }).success, true);
});

t.test('vendor_model is one of the conventions', async (t) => {
  t.same(issues({ input: [user], vendor_model: 'vendor_v1' }), {});
  t.match(issues({ input: [user], vendor_model: 'gpt' }), { vendor_model: /./ });
});
