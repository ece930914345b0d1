// POST /v1/responses over real HTTP on PostgreSQL, against the fake chat-completions and search servers:
// mapping, inline tool calls, every action type, the speech/tool-call rules, num_responses, web_search, 502/503.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { startFakeChatServer, type RecordedChatRequest } from '../fakes/chat-server.js';
import { startFakeSearchServer } from '../fakes/search-server.js';
import { api, startTestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

t.setTimeout(300_000);

const chat = await startFakeChatServer();
const search = await startFakeSearchServer();
const server = await startTestServer({
  db: 'postgres',
  env: {
    PARLEY_LLM_BASE_URL: chat.baseUrl,
    PARLEY_LLM_MODEL: 'fake-model',
    PARLEY_LLM_API_KEY: 'sk-fake',
    PARLEY_LLM_TIMEOUT_MS: '4000',
    PARLEY_LLM_MAX_RETRIES: '1',
    PARLEY_WEB_SEARCH_URL: search.url,
    PARLEY_RESPONSES_RATE_BURST: '1000',
    PARLEY_RESPONSES_MAX: '4',
  },
});
t.teardown(async () => {
  await server.close();
  await chat.close();
  await search.close();
});
const client = api(server);

t.beforeEach(() => {
  chat.requests.length = 0;
  search.queries.length = 0;
});

const user = (text: string) => ({ role: 'user', text });
const lookup = {
  name: 'lookup_order',
  description: 'Look up an order',
  parameters: {
    type: 'object',
    properties: { order_id: { type: 'string' }, verbose: { type: 'boolean' } },
    required: ['order_id'],
  },
  parameter_locations: { verbose: 'query_string' },
};
const post = (body: Record<string, unknown>) =>
  client.post('/v1/responses', { system_prompt: 'You are Ada, a shop assistant.', ...body });
const lastRequest = (): RecordedChatRequest => chat.requests[chat.requests.length - 1]!;

async function storeTool(definition: Record<string, unknown>): Promise<void> {
  await server.sql`insert into tools (id, org_id, project_id, name, type, definition)
    values (${`tool_${randomUUID()}`}, ${server.orgId}, ${server.projectId}, ${definition.name as string},
            ${definition.type as string}, ${server.sql.json(definition as never)})`;
}

t.test('a text reply; system prompt, voice, languages and the whole history shape the request', async (t) => {
  chat.script({ reply: { content: 'Your order ships tomorrow.' } });
  const res = await post({
    voice_id: 'grant',
    default_language: 'en',
    additional_languages: ['de'],
    tool_definitions: [lookup],
    tools: ['natural_conversation_ending'],
    input: [
      user('Where is my order 42?'),
      {
        role: 'assistant',
        text: 'Let me check.',
        tool_calls: [
          {
            tool_call_id: 'c1',
            tool: { name: 'lookup_order' },
            request_body: { order_id: '42' },
            query_params: { verbose: 'true' },
          },
        ],
      },
      { type: 'tool_call_output', tool_call_id: 'c1', response_status_code: 200, response_body: { status: 'packed' } },
      { role: 'assistant', text: 'It is packed.' },
      user('Press one for me'),
      { role: 'assistant', text: '', action: { type: 'dtmf', digits: '1' } },
      user('When does it ship?'),
    ],
  });
  t.equal(res.status, 200);
  t.same(res.body, { responses: [{ text: 'Your order ships tomorrow.', tool_calls: [] }] });
  const req = lastRequest();
  t.equal(req.body.model, 'fake-model');
  t.equal(req.headers.authorization, 'Bearer sk-fake');
  const [system, ...history] = req.body.messages;
  t.equal(system!.role, 'system');
  t.match(system!.content, /You are Ada, a shop assistant\./);
  t.match(system!.content, /voice "grant"/);
  t.match(system!.content, /Speak English by default\. The user may also speak German/);
  t.same(
    history.map((m) => m.role),
    ['user', 'assistant', 'tool', 'assistant', 'user', 'assistant', 'tool', 'user'],
  );
  t.match(history[1], { content: 'Let me check.', tool_calls: [{ id: 'c1', function: { name: 'lookup_order' } }] });
  t.same(JSON.parse((history[1]!.tool_calls as { function: { arguments: string } }[])[0]!.function.arguments), {
    order_id: '42',
    verbose: 'true',
  });
  t.same(JSON.parse(history[2]!.content!), { status_code: 200, body: { status: 'packed' } });
  t.equal(history[2]!.tool_call_id, 'c1');
  t.match(history[5], { tool_calls: [{ function: { name: 'keypad_input', arguments: '{"digits":"1"}' } }] });
  t.same(
    req.body.tools!.map((tool) => tool.function.name),
    ['lookup_order', 'natural_conversation_ending'],
  );
  t.same(req.body.tools![0]!.function.parameters, {
    type: 'object',
    properties: lookup.parameters.properties,
    required: ['order_id'],
  });
});

t.test('always exactly num_responses responses, one completion each', async (t) => {
  chat.script({ reply: { content: 'One.' } }, { reply: { content: 'Two.' } }, { reply: { content: 'Three.' } });
  const res = await post({ input: [user('Hi')], num_responses: 3 });
  t.equal(res.status, 200);
  t.equal(res.body.responses.length, 3);
  t.same(res.body.responses.map((r: { text: string }) => r.text).sort(), ['One.', 'Three.', 'Two.']);
  t.equal(chat.requests.length, 3);
  const over = await post({ input: [user('Hi')], num_responses: 5 });
  t.equal(over.status, 400);
  t.match(over.body, { param_errors: { num_responses: /at most 4/ } });
});

t.test(
  'an inline tool call becomes a tool_calls entry (not executed) with request_body and query_params',
  async (t) => {
    chat.script({
      reply: {
        content: 'One moment.',
        toolCalls: [{ name: 'lookup_order', arguments: { order_id: '42', verbose: true } }],
      },
    });
    const res = await post({ input: [user('Where is order 42?')], tool_definitions: [lookup] });
    t.equal(res.status, 200);
    const [r] = res.body.responses;
    t.equal(r.text, 'One moment.');
    t.equal(r.tool_calls.length, 1);
    t.match(r.tool_calls[0], {
      tool: { name: 'lookup_order' },
      request_body: { order_id: '42' },
      query_params: { verbose: 'true' },
    });
    t.match(r.tool_calls[0].tool_call_id, /^call_/);
    t.notOk('action' in r);
    t.equal(chat.requests.length, 1, 'nothing ran after the call');
  },
);

t.test('require_speech_before_tool_call (default true) gets speech before a silent call', async (t) => {
  chat.script(
    { reply: { content: null, toolCalls: [{ name: 'lookup_order', arguments: { order_id: '7' } }] } },
    { reply: { content: 'Let me look that up for you.' } },
  );
  const res = await post({ input: [user('Order 7?')], tool_definitions: [lookup] });
  t.equal(res.status, 200);
  t.equal(res.body.responses[0].text, 'Let me look that up for you.');
  t.match(res.body.responses[0].tool_calls, [{ tool: { name: 'lookup_order' }, request_body: { order_id: '7' } }]);
  t.equal(chat.requests.length, 2);
  t.equal(lastRequest().body.tool_choice, 'none');
  t.match(lastRequest().body.messages.at(-1), { role: 'system', content: /lookup_order/ });

  chat.script({ reply: { content: null, toolCalls: [{ name: 'lookup_order', arguments: { order_id: '7' } }] } });
  const silent = await post({
    input: [user('Order 7?')],
    tool_definitions: [{ ...lookup, require_speech_before_tool_call: false }],
  });
  t.equal(silent.status, 200);
  t.equal(silent.body.responses[0].text, '');
  t.equal(silent.body.responses[0].tool_calls.length, 1);
  t.equal(chat.requests.length, 3, 'no speech was asked for');
});

t.test('forbid_tool_call_after_speech drops a call made after speech and keeps the speech', async (t) => {
  const def = { ...lookup, forbid_tool_call_after_speech: true };
  chat.script({
    reply: { content: 'Sure, checking.', toolCalls: [{ name: 'lookup_order', arguments: { order_id: '1' } }] },
  });
  const res = await post({ input: [user('Order 1?')], tool_definitions: [def] });
  t.equal(res.status, 200);
  t.same(res.body.responses[0], { text: 'Sure, checking.', tool_calls: [] });
  // A call without speech before it is kept (and gets its required speech generated).
  chat.script(
    { reply: { content: '', toolCalls: [{ name: 'lookup_order', arguments: { order_id: '1' } }] } },
    { reply: { content: 'Checking.' } },
  );
  const kept = await post({ input: [user('Order 1?')], tool_definitions: [def] });
  t.equal(kept.body.responses[0].text, 'Checking.');
  t.equal(kept.body.responses[0].tool_calls.length, 1);
});

t.test('built-in actions', async (t) => {
  t.test('keypad_input -> dtmf with digits', async (t) => {
    chat.script({
      reply: { content: 'Pressing two.', toolCalls: [{ name: 'keypad_input', arguments: { digits: '2#' } }] },
    });
    const res = await post({ input: [user('Press 2 then pound')], tools: ['keypad_input'] });
    t.same(res.body.responses[0], { text: 'Pressing two.', tool_calls: [], action: { type: 'dtmf', digits: '2#' } });
  });
  t.test('natural_conversation_ending -> assistant_ended_conversation', async (t) => {
    chat.script({
      reply: { content: 'Goodbye!', toolCalls: [{ name: 'natural_conversation_ending', arguments: {} }] },
    });
    const res = await post({
      input: [user('Thanks, bye')],
      tools: [{ type: 'built_in', name: 'natural_conversation_ending' }],
    });
    t.same(res.body.responses[0], {
      text: 'Goodbye!',
      tool_calls: [],
      action: { type: 'assistant_ended_conversation' },
    });
  });
  t.test('choose_not_to_respond -> assistant_chose_not_to_respond with respond_after_sec', async (t) => {
    chat.script({ reply: { content: 'Hmm', toolCalls: [{ name: 'choose_not_to_respond', arguments: {} }] } });
    const res = await post({
      input: [user('hold on, talking to my wife')],
      tools: [{ type: 'built_in', name: 'choose_not_to_respond', tool_config: { respond_after_sec: 4.5 } }],
    });
    t.same(res.body.responses[0], {
      text: '',
      tool_calls: [],
      action: { type: 'assistant_chose_not_to_respond', respond_after_sec: 4.5 },
    });
    chat.script({ reply: { toolCalls: [{ name: 'choose_not_to_respond', arguments: {} }] } });
    const silent = await post({ input: [user('uh')], tools: ['choose_not_to_respond'] });
    t.same(silent.body.responses[0].action, { type: 'assistant_chose_not_to_respond', respond_after_sec: null });
  });
  t.test('speech_before_tool_call suppressed drops the speech; required generates it', async (t) => {
    chat.script({ reply: { content: 'Bye now', toolCalls: [{ name: 'natural_conversation_ending', arguments: {} }] } });
    const suppressed = await post({
      input: [user('bye')],
      tools: [
        {
          type: 'built_in',
          name: 'natural_conversation_ending',
          tool_config: { speech_before_tool_call: 'suppressed' },
        },
      ],
    });
    t.same(suppressed.body.responses[0], {
      text: '',
      tool_calls: [],
      action: { type: 'assistant_ended_conversation' },
    });
    chat.script(
      { reply: { toolCalls: [{ name: 'keypad_input', arguments: { digits: '5' } }] } },
      { reply: { content: 'Pressing five.' } },
    );
    const required = await post({
      input: [user('press 5')],
      tools: [{ type: 'built_in', name: 'keypad_input', tool_config: { speech_before_tool_call: 'required' } }],
    });
    t.same(required.body.responses[0], {
      text: 'Pressing five.',
      tool_calls: [],
      action: { type: 'dtmf', digits: '5' },
    });
  });
  t.test('one action per response: the first call decides', async (t) => {
    chat.script({
      reply: {
        content: 'Ok.',
        toolCalls: [
          { name: 'keypad_input', arguments: { digits: '9' } },
          { name: 'natural_conversation_ending', arguments: {} },
          { name: 'lookup_order', arguments: { order_id: '1' } },
        ],
      },
    });
    const res = await post({
      input: [user('9 then bye')],
      tools: ['keypad_input', 'natural_conversation_ending'],
      tool_definitions: [lookup],
    });
    t.same(res.body.responses[0], { text: 'Ok.', tool_calls: [], action: { type: 'dtmf', digits: '9' } });
  });
});

t.test('stored transfer tools become transfer actions with the stored settings', async (t) => {
  await storeTool({
    name: 'transfer_billing',
    description: 'Transfer to billing',
    type: 'built_in_transfer_to_phone_number',
    execution_mode: 'sync',
    phone_number: '+14155550100',
    dtmf: '12',
    detect_voicemail: true,
    use_agent_phone_number: true,
    keep_listening: true,
    on_transfer_no_answer: 'keep_retrying',
  });
  await storeTool({
    name: 'transfer_anywhere',
    description: 'Transfer to the number the caller asks for',
    type: 'built_in_transfer_to_phone_number',
    execution_mode: 'sync',
    use_agent_phone_number: false,
    keep_listening: false,
    dynamic_dtmf: true,
  });
  await storeTool({
    name: 'handoff',
    description: 'Hand over to another agent',
    type: 'built_in_transfer_to_agent',
    execution_mode: 'sync',
    agents_to_transfer_to: ['sales-bot', 'support-bot'],
  });
  await storeTool({
    name: 'crm_webhook',
    description: 'CRM',
    type: 'custom_webhook',
    execution_mode: 'sync',
    endpoint_method: 'GET',
    endpoint_url: 'https://crm.example.com/x',
  });

  chat.script({
    reply: { content: 'Transferring you to billing.', toolCalls: [{ name: 'transfer_billing', arguments: {} }] },
  });
  const phone = await post({ input: [user('billing please')], tools: ['transfer_billing'], project: 'main' });
  t.equal(phone.status, 200);
  t.same(phone.body.responses[0], {
    text: 'Transferring you to billing.',
    tool_calls: [],
    action: {
      type: 'transfer_to_phone_number',
      phone_number: '+14155550100',
      detect_voicemail: true,
      use_agent_phone_number: true,
      keep_listening: true,
      on_transfer_no_answer: 'keep_retrying',
      dtmf: '12',
    },
  });
  t.same(lastRequest().body.tools![0]!.function.parameters, {
    type: 'object',
    properties: {},
    required: [],
    additionalProperties: false,
  });

  chat.script({
    reply: {
      content: 'Connecting.',
      toolCalls: [{ name: 'transfer_anywhere', arguments: { phone_number: '+442071234567', dtmf: '3' } }],
    },
  });
  const dynamic = await post({
    input: [user('call +44 20 7123 4567, ext 3')],
    tools: ['transfer_anywhere'],
    project: server.projectId,
  });
  t.same(dynamic.body.responses[0].action, {
    type: 'transfer_to_phone_number',
    phone_number: '+442071234567',
    detect_voicemail: false,
    use_agent_phone_number: false,
    keep_listening: false,
    on_transfer_no_answer: 'return_to_assistant',
    dtmf: '3',
  });

  chat.script({
    reply: { content: 'Handing you to sales.', toolCalls: [{ name: 'handoff', arguments: { agent: 'sales-bot' } }] },
  });
  const agent = await post({ input: [user('sales')], tools: ['handoff'], project: 'main' });
  t.same(agent.body.responses[0].action, { type: 'transfer_to_agent', agent: 'sales-bot' });
  t.same(
    (lastRequest().body.tools![0]!.function.parameters as { properties: { agent: { enum: string[] } } }).properties
      .agent.enum,
    ['sales-bot', 'support-bot'],
  );

  chat.script({ reply: { content: 'x', toolCalls: [{ name: 'handoff', arguments: { agent: 'ghost-bot' } }] } });
  const wrongAgent = await post({ input: [user('ghost')], tools: ['handoff'], project: 'main' });
  t.equal(wrongAgent.status, 502, 'an agent not in agents_to_transfer_to is an unusable answer');

  t.equal(chat.requests.length, 4);
  chat.requests.length = 0;

  // Stored tools of the other built-in types are those built-ins under their own name, description and config.
  await storeTool({
    name: 'wait_quietly',
    description: 'Wait while the caller looks for something',
    type: 'built_in_choose_not_to_respond',
    execution_mode: 'sync',
    respond_after_sec: 7,
  });
  await storeTool({
    name: 'press_keys',
    description: 'Navigate the IVR',
    type: 'built_in_keypad_input',
    execution_mode: 'sync',
    speech_before_tool_call: 'suppressed',
  });
  chat.script({ reply: { content: 'Sure.', toolCalls: [{ name: 'wait_quietly', arguments: {} }] } });
  const wait = await post({ input: [user('hang on, let me find my card')], tools: ['wait_quietly'], project: 'main' });
  t.same(wait.body.responses[0], {
    text: '',
    tool_calls: [],
    action: { type: 'assistant_chose_not_to_respond', respond_after_sec: 7 },
  });
  t.match(lastRequest().body.tools![0]!.function, {
    name: 'wait_quietly',
    description: 'Wait while the caller looks for something',
  });
  chat.script({ reply: { content: 'Pressing 3.', toolCalls: [{ name: 'press_keys', arguments: { digits: '3' } }] } });
  const keys = await post({ input: [user('menu says press 3')], tools: ['press_keys'], project: 'main' });
  t.same(keys.body.responses[0], { text: '', tool_calls: [], action: { type: 'dtmf', digits: '3' } });

  const noProject = await post({ input: [user('x')], tools: ['handoff'] });
  t.equal(noProject.status, 400);
  t.match(noProject.body, { param_errors: { project: /required when tools names a stored tool/ } });
  const unknownProject = await post({ input: [user('x')], tools: ['handoff'], project: 'nope' });
  t.equal(unknownProject.status, 404);
  t.match(unknownProject.body.error.message, /nope/);
  const unknownTool = await post({ input: [user('x')], tools: ['no_such_tool'], project: 'main' });
  t.equal(unknownTool.status, 400);
  t.match(unknownTool.body, { param_errors: { 'tools.0': /no tool 'no_such_tool'/ } });
  const webhook = await post({ input: [user('x')], tools: ['crm_webhook'], project: 'main' });
  t.equal(webhook.status, 400);
  t.match(webhook.body, {
    param_errors: { 'tools.0': /only built-in tools and stored transfer tools.*tool_definitions/ },
  });
  t.equal(chat.requests.length, 2, 'rejected requests never reached the model');
});

t.test('web_search runs and its results reach the model before its final reply', async (t) => {
  search.results.set('weather oslo', [
    { url: 'https://met.example/oslo', title: 'Oslo', content: 'Sunny, 12 degrees' },
  ]);
  chat.script(
    {
      reply: {
        content: 'Let me check.',
        toolCalls: [{ id: 'ws1', name: 'web_search', arguments: { query: 'weather oslo' } }],
      },
    },
    (req) => {
      const tool = req.body.messages.find((m) => m.role === 'tool');
      return {
        reply: {
          content:
            tool && /Sunny, 12 degrees/.test(tool.content ?? '')
              ? 'It is sunny and 12 degrees.'
              : 'I could not find it.',
        },
      };
    },
  );
  const res = await post({ input: [user('Weather in Oslo?')], tools: ['web_search'] });
  t.equal(res.status, 200);
  t.same(search.queries, ['weather oslo']);
  t.same(res.body.responses[0], { text: 'Let me check. It is sunny and 12 degrees.', tool_calls: [] });
  t.equal(chat.requests.length, 2);
  const second = chat.requests[1]!.body.messages;
  t.match(second.at(-2), { role: 'assistant', tool_calls: [{ id: 'ws1', function: { name: 'web_search' } }] });
  t.match(second.at(-1), { role: 'tool', tool_call_id: 'ws1' });

  // A failing search is reported to the model, which answers anyway.
  search.failWith = 500;
  t.teardown(() => void (search.failWith = null));
  chat.script({ reply: { toolCalls: [{ id: 'ws2', name: 'web_search', arguments: { query: 'x' } }] } }, (req) => ({
    reply: { content: /HTTP 500/.test(req.body.messages.at(-1)!.content ?? '') ? 'Search is down.' : 'unexpected' },
  }));
  const failed = await post({ input: [user('x?')], tools: ['web_search'] });
  t.equal(failed.body.responses[0].text, 'Search is down.');
});

t.test('web_search with speech_before_tool_call required gets speech before the search', async (t) => {
  chat.script(
    { reply: { toolCalls: [{ id: 'ws3', name: 'web_search', arguments: { query: 'news' } }] } },
    { reply: { content: 'Let me look that up.' } },
    { reply: { content: 'Nothing new today.' } },
  );
  const res = await post({
    input: [user('Any news?')],
    tools: [{ type: 'built_in', name: 'web_search', tool_config: { speech_before_tool_call: 'required' } }],
  });
  t.same(res.body.responses[0], { text: 'Let me look that up. Nothing new today.', tool_calls: [] });
  t.equal(chat.requests[1]!.body.tool_choice, 'none', 'the second request asked for the speech');
  t.same(search.queries, ['news']);
});

t.test('after the search rounds the model must answer without web_search', async (t) => {
  const searchCall = { reply: { toolCalls: [{ name: 'web_search', arguments: { query: 'again' } }] } };
  chat.script(searchCall, searchCall, searchCall, (req) => ({
    reply: { content: req.body.tools?.some((x) => x.function.name === 'web_search') ? 'offered' : 'Final answer.' },
  }));
  const res = await post({ input: [user('loop')], tools: ['web_search'] });
  t.equal(res.body.responses[0].text, 'Final answer.');
  t.equal(search.queries.length, 3);
});

t.test('502 when the model answers something unusable', async (t) => {
  const cases: [string, Parameters<typeof chat.script>[0]][] = [
    ['not JSON', { raw: '<html>oops</html>' }],
    ['not a completion', { raw: JSON.stringify({ choices: [] }) }],
    ['a function it was not offered', { reply: { toolCalls: [{ name: 'rm_rf', arguments: {} }] } }],
    ['arguments that are not JSON', { reply: { toolCalls: [{ name: 'lookup_order', arguments: '{"order_id": ' }] } }],
    ['neither text nor a call', { reply: { content: '   ' } }],
    ['bad keypad digits', { reply: { toolCalls: [{ name: 'keypad_input', arguments: { digits: 'abc' } }] } }],
    ['a 4xx of the model server', { status: 400, body: { error: { message: 'context too long' } } }],
  ];
  for (const [what, step] of cases) {
    chat.script(step);
    const res = await post({ input: [user('hi')], tool_definitions: [lookup], tools: ['keypad_input'] });
    t.equal(res.status, 502, what);
    t.equal(res.body.error.code, 'upstream_invalid', what);
    t.match(res.body.error.message, /invalid response from the chat model/, what);
  }
});

t.test('503 when the model is unavailable; a retry that succeeds is a 200', async (t) => {
  chat.script({ status: 503 }, { status: 500 });
  const down = await post({ input: [user('hi')] });
  t.equal(down.status, 503);
  t.equal(down.body.error.code, 'upstream_unavailable');
  t.equal(chat.requests.length, 2, 'one retry (PARLEY_LLM_MAX_RETRIES=1)');

  chat.script({ hang: true }, { hang: true });
  const slow = await post({ input: [user('hi')] });
  t.equal(slow.status, 503);
  t.match(slow.body.error.message, /no answer within 4000 ms/);

  chat.script({ status: 429, headers: { 'retry-after': '0' } }, { reply: { content: 'Back.' } });
  const retried = await post({ input: [user('hi')] });
  t.equal(retried.status, 200);
  t.equal(retried.body.responses[0].text, 'Back.');
});

t.test('400 with the validation shape for body rules', async (t) => {
  const res = await post({
    input: [
      user('x'),
      { role: 'assistant', text: '', tool_calls: [{ tool_call_id: 'a', tool: { name: 'lookup_order' } }] },
      user('y'),
    ],
  });
  t.equal(res.status, 400);
  t.match(res.body, {
    error: { message: /input\.2/ },
    param_errors: { 'input.2': /expected the output of tool call 'a'/ },
  });
  const empty = await post({ input: [] });
  t.equal(empty.status, 400);
  t.match(empty.body.param_errors, { input: /at least one/ });
  const reserved = await post({ input: [user('x')], tool_definitions: [{ ...lookup, name: 'web_search' }] });
  t.match(reserved.body.param_errors, { 'tool_definitions.0.name': /reserved/ });
  t.equal(chat.requests.length, 0);
});

t.test('the endpoint is in the OpenAPI document with its request and response schemas', async (t) => {
  const res = await client.get('/v1/openapi.json');
  t.equal(res.status, 200);
  const op = res.body.paths['/v1/responses'].post;
  t.ok(op.requestBody.content['application/json'].schema.properties.input, 'the body schema');
  t.ok(op.responses['200'], 'the 200 schema');
});

t.test('a client that goes away cancels the chat-model request in flight', async (t) => {
  chat.script({ hang: true });
  const before = chat.abandoned;
  const ac = new AbortController();
  const pending = fetch(`${server.url}/v1/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ system_prompt: 'x', input: [user('hi')] }),
    signal: ac.signal,
  });
  await chat.waitForRequests(1);
  ac.abort();
  await t.rejects(pending);
  await until(() => chat.abandoned !== before, { what: 'the upstream request closed' });
  t.equal(chat.abandoned, before + 1, 'the upstream request was closed before its answer');
  t.equal(chat.requests.length, 1, 'and not retried');
});
