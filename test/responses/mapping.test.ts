// The pure mapping of POST /v1/responses: prompt shaping, history, tool resolution, interpretation of a
// completion, the gate decision; and the SearxNG client against the fake search server.
import t from 'tap';
import type { ChatCompletion } from '../../src/engines/chat-client.js';
import { ChatUpstreamInvalidError } from '../../src/engines/chat-client.js';
import { decideGate } from '../../src/responses/gate.js';
import { interpret } from '../../src/responses/interpret.js';
import { conversationMessages, systemMessage } from '../../src/responses/prompt.js';
import { resolveTools, storedToolNames, ToolReferenceError } from '../../src/responses/resolve.js';
import { storedTool } from '../../src/responses/stored-tools.js';
import { functionFor, type OfferedTool } from '../../src/responses/tools.js';
import { createWebSearch, MAX_SEARCH_RESULTS, WebSearchError } from '../../src/engines/web-search.js';
import { responsesRequestBody } from '../../src/schemas/responses.js';
import { startFakeSearchServer } from '../fakes/search-server.js';

const parse = (body: Record<string, unknown>) =>
  responsesRequestBody(5).parse({ system_prompt: 'Be kind.', input: [{ role: 'user', text: 'hi' }], ...body });

const completion = (content: string, calls: { name: string; args: unknown }[] = []): ChatCompletion => ({
  content,
  toolCalls: calls.map((c, i) => ({
    id: `m${i}`,
    type: 'function',
    function: { name: c.name, arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args) },
  })),
  finishReason: null,
  model: null,
  usage: null,
});

let ids = 0;
const newId = () => `call_${++ids}`;

t.test('the system message carries the prompt, the voice and language names', async (t) => {
  const base = { system_prompt: ' Be kind. ', voice_id: 'sabrina', additional_languages: [] as string[] };
  const plain = systemMessage(base);
  t.match(plain, /^Be kind\.\n\n/);
  t.match(plain, /voice "sabrina"/);
  t.notMatch(plain, /Speak/);
  t.match(systemMessage({ ...base, default_language: 'fil' }), /Speak Filipino\./);
  t.match(
    systemMessage({ ...base, default_language: 'en', additional_languages: ['yue', 'es'] }),
    /Speak English by default\. The user may also speak Cantonese or Spanish/,
  );
  t.match(systemMessage({ ...base, additional_languages: ['fr'] }), /The user may speak French/);
});

t.test('history: outputs, actions and empty texts become chat messages', async (t) => {
  const body = parse({
    input: [
      { role: 'user', text: 'bye' },
      { role: 'assistant', text: 'Goodbye!', action: { type: 'assistant_ended_conversation' } },
      { role: 'user', text: 'wait' },
      { role: 'assistant', text: '', tool_calls: [{ tool_call_id: 'x', tool: { name: 'f' }, request_body: { a: 1 } }] },
      { type: 'tool_call_output', tool_call_id: 'x', timed_out: true, error_message: 'slow' },
    ],
  });
  const messages = conversationMessages(body, body.input);
  t.match(messages[2], {
    role: 'assistant',
    content: 'Goodbye!',
    tool_calls: [{ id: 'action_1', function: { name: 'natural_conversation_ending', arguments: '{}' } }],
  });
  t.same(messages[3], { role: 'tool', tool_call_id: 'action_1', content: '{"status":"done"}' });
  t.match(messages[5], { role: 'assistant', content: null });
  t.same(JSON.parse((messages[6] as { content: string }).content), { error: 'slow', timed_out: true });
});

t.test('tools resolve in order: inline definitions, then built-ins with their configuration', async (t) => {
  const body = parse({
    tool_definitions: [{ name: 'f', description: 'd', parameters: { type: 'object', properties: {} } }],
    tools: [
      'keypad_input',
      { type: 'built_in', name: 'choose_not_to_respond', tool_config: { respond_after_sec: 3 } },
      'web_search',
    ],
  });
  const offered = resolveTools(body, new Map(), { webSearch: true });
  t.same(
    offered.map((o) => o.kind),
    ['inline', 'keypad_input', 'choose_not_to_respond', 'web_search'],
  );
  t.match(
    offered[0],
    { speech: { requireBefore: true, forbidCallAfterSpeech: false } },
    'inline tools require speech by default',
  );
  t.match(offered[2], { respondAfterSec: 3 });
  t.same(functionFor(offered[1]!).function.parameters, {
    type: 'object',
    properties: { digits: { type: 'string', description: 'Keys to press, in order: 0-9, *, #' } },
    required: ['digits'],
    additionalProperties: false,
  });
  const err = t.throws(() => resolveTools(body, new Map(), { webSearch: false })) as ToolReferenceError;
  t.equal(err.param, 'tools.2');
  t.match(err.message, /PARLEY_WEB_SEARCH_URL/);
  t.same(storedToolNames(parse({ tools: ['keypad_input', 'desk', { type: 'built_in', name: 'web_search' }] }).tools), [
    'desk',
  ]);
});

t.test('stored tools take the defaults a read reports', async (t) => {
  const phone = storedTool('tool_1', {
    name: 'desk',
    description: 'd',
    type: 'built_in_transfer_to_phone_number',
    execution_mode: 'sync',
  });
  t.same(phone, {
    type: 'built_in_transfer_to_phone_number',
    name: 'desk',
    description: 'd',
    phone_number: null,
    dtmf: null,
    dynamic_dtmf: false,
    detect_voicemail: false,
    use_agent_phone_number: true,
    keep_listening: true,
    on_transfer_no_answer: 'return_to_assistant',
    require_speech_before_tool_call: false,
  });
  t.same(
    storedTool('tool_2', {
      name: 'ctx',
      description: 'd',
      type: 'custom_context',
      execution_mode: 'sync',
      context: 'c',
    }),
    {
      type: 'custom_context',
      name: 'ctx',
    },
  );
});

t.test('interpretation of a completion', async (t) => {
  const offered = resolveTools(
    parse({
      tool_definitions: [
        {
          name: 'f',
          description: 'd',
          parameters: { type: 'object', properties: { a: { type: 'string' }, n: { type: 'integer' } } },
          parameter_locations: { n: 'query_string' },
        },
        {
          name: 'g',
          description: 'd',
          parameters: { type: 'object', properties: {} },
          require_speech_before_tool_call: false,
          forbid_tool_call_after_speech: true,
        },
      ],
      tools: ['natural_conversation_ending', 'web_search'],
    }),
    new Map(),
    { webSearch: true },
  );

  t.test('text only', async (t) => {
    t.same(interpret(completion('  Hi!  '), offered, newId), {
      kind: 'reply',
      text: 'Hi!',
      toolCalls: [],
      speechNeededFor: null,
      dropped: [],
    });
  });
  t.test('arguments are placed by parameter_locations; query values become strings', async (t) => {
    const r = interpret(completion('ok', [{ name: 'f', args: { a: 'x', n: 3 } }]), offered, newId);
    t.match(r, {
      kind: 'reply',
      toolCalls: [{ tool: { name: 'f' }, request_body: { a: 'x' }, query_params: { n: '3' } }],
    });
  });
  t.test('a call without arguments gets an empty request_body', async (t) => {
    const r = interpret(completion('', [{ name: 'g', args: '' }]), offered, newId);
    t.match(r, { kind: 'reply', text: '', speechNeededFor: null });
    t.same(r.kind === 'reply' && r.toolCalls[0]!.request_body, {});
  });
  t.test('a speech-requiring call without speech asks for it', async (t) => {
    t.match(interpret(completion('', [{ name: 'f', args: { a: 'x' } }]), offered, newId), { speechNeededFor: 'f' });
  });
  t.test('forbid_tool_call_after_speech drops only the forbidding tool', async (t) => {
    const r = interpret(
      completion('Sure.', [
        { name: 'g', args: {} },
        { name: 'f', args: { a: 'y' } },
      ]),
      offered,
      newId,
    );
    t.match(r, {
      kind: 'reply',
      text: 'Sure.',
      toolCalls: [{ tool: { name: 'f' } }],
      dropped: ['g: called after speech'],
    });
  });
  t.test('web_search calls come first: a search round', async (t) => {
    t.same(
      interpret(
        completion('Checking.', [
          { name: 'web_search', args: { query: 'q' } },
          { name: 'f', args: {} },
        ]),
        offered,
        newId,
      ),
      {
        kind: 'search',
        speech: 'Checking.',
        searches: [{ id: 'm0', query: 'q' }],
        speechNeededFor: null,
      },
    );
  });
  t.test('an inline call first keeps the calls and drops actions', async (t) => {
    const r = interpret(
      completion('x', [
        { name: 'f', args: {} },
        { name: 'natural_conversation_ending', args: {} },
      ]),
      offered,
      newId,
    );
    t.match(r, {
      toolCalls: [{ tool: { name: 'f' } }],
      dropped: ['natural_conversation_ending: an action beside tool calls'],
    });
    t.notOk(r.kind === 'reply' && r.action);
  });
  t.test('unusable answers throw ChatUpstreamInvalidError', async (t) => {
    t.throws(() => interpret(completion('', []), offered, newId), ChatUpstreamInvalidError);
    t.throws(() => interpret(completion('', [{ name: 'nope', args: {} }]), offered, newId), /not offered/);
    t.throws(() => interpret(completion('', [{ name: 'f', args: '[1]' }]), offered, newId), /not a JSON object/);
    t.throws(
      () => interpret(completion('', [{ name: 'web_search', args: { query: ' ' } }]), offered, newId),
      /search query/,
    );
    t.throws(() => interpret(completion('', [{ name: 'f', args: 'nope' }]), offered, newId), /not JSON/);
    t.match(
      interpret(completion('Hi', [{ name: 'g', args: {} }]), offered, newId),
      { kind: 'reply', text: 'Hi', toolCalls: [] },
      'a reply whose only call is dropped keeps its text',
    );
  });
});

t.test('transfer tools: a fixed number is not asked for; a chosen one must be E.164', async (t) => {
  const fixed: OfferedTool[] = resolveTools(
    { tools: ['desk'], tool_definitions: [], project: 'main' },
    new Map([
      [
        'desk',
        storedTool('t', {
          name: 'desk',
          description: 'd',
          type: 'built_in_transfer_to_phone_number',
          execution_mode: 'sync',
        }),
      ],
    ]),
    { webSearch: false },
  );
  t.match(
    functionFor(fixed[0]!).function.parameters,
    { required: ['phone_number'] },
    'no stored number: the model chooses',
  );
  t.throws(
    () => interpret(completion('', [{ name: 'desk', args: { phone_number: '555-1234' } }]), fixed, newId),
    /E\.164/,
  );
  t.match(
    interpret(completion('Connecting.', [{ name: 'desk', args: { phone_number: '+15551234567' } }]), fixed, newId),
    {
      action: { type: 'transfer_to_phone_number', phone_number: '+15551234567', dtmf: null },
    },
  );
});

t.test('the gate: model first, then workspace flag over the server default', async (t) => {
  const model = { PARLEY_LLM_BASE_URL: 'http://m/v1', PARLEY_LLM_MODEL: 'm' };
  t.match(decideGate(true, {}), { open: false, message: /PARLEY_LLM_BASE_URL/ });
  t.match(decideGate(true, { PARLEY_LLM_BASE_URL: 'http://m/v1' }), { open: false });
  t.same(decideGate(undefined, model), { open: true }, 'on by default when a model is configured');
  t.match(decideGate(undefined, { ...model, PARLEY_RESPONSES_ENABLED: false }), {
    open: false,
    message: /admin command/,
  });
  t.same(decideGate(true, { ...model, PARLEY_RESPONSES_ENABLED: false }), { open: true });
  t.match(decideGate(false, { ...model, PARLEY_RESPONSES_ENABLED: true }), { open: false });
});

t.test('the SearxNG client', async (t) => {
  const fake = await startFakeSearchServer();
  t.teardown(() => fake.close());
  fake.results.set(
    'many',
    Array.from({ length: 9 }, (_, i) => ({ url: `https://e.org/${i}`, title: `T${i}`, content: 'c'.repeat(900) })),
  );
  for (const base of [fake.url, `${fake.url}/`, `${fake.url}/search`]) {
    const hits = await createWebSearch(base)('many');
    t.equal(hits.length, MAX_SEARCH_RESULTS, base);
    t.same(hits[0], { title: 'T0', url: 'https://e.org/0', snippet: 'c'.repeat(500) });
  }
  t.same(fake.queries, ['many', 'many', 'many']);
  fake.failWith = 503;
  await t.rejects(createWebSearch(fake.url)('x'), WebSearchError);
  await t.rejects(createWebSearch('http://127.0.0.1:1')('x'), /search failed/);
});
