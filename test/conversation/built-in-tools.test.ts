// The built-ins an agent names by their bare id (keypad_input, natural_conversation_ending, choose_not_to_respond,
// web_search) are live, with built_in_tool_configs over their defaults: speech_before_tool_call (required,
// optional, suppressed) for keypad input and the natural ending, respond_after_sec for choose not to respond,
// web_search through a search server (a fake SearxNG here) or warned of and not offered without one.
import t from 'tap';
import type { ResolvedAgent } from '../../src/domain/conversation-agent.js';
import { createWebSearch } from '../../src/engines/web-search.js';
import { startFakeSearchServer } from '../fakes/search-server.js';
import { until } from '../helpers/wait.js';
import { config, setup, tickUntil, type Setup } from './harness.js';
import { ProbeEngine } from './probe-engine.js';

t.setTimeout(120_000);

const SHOWN = new Set([
  'assistant_started_speaking',
  'audio',
  'assistant_finished_speaking',
  'dtmf',
  'assistant_ended_conversation',
  'assistant_chose_not_to_respond',
]);
const timeline = (s: Setup) => s.client.types.filter((ty) => SHOWN.has(ty));
const assistantItems = (s: Setup) =>
  s.store
    .only()
    .items.filter((i) => i.role === 'assistant')
    .map((i) => [i.live_transcript, (i.tool_calls ?? []).map((c) => c.tool.name)]);

async function start(fields: Record<string, unknown>, opts: Parameters<typeof setup>[0] = {}): Promise<Setup> {
  const s = setup(opts);
  await s.conv.start({ kind: 'config', config: config(fields) });
  if (s.conv.state !== 'ready') throw new Error(`not ready: ${s.conv.state}: ${JSON.stringify(s.client.log)}`);
  return s;
}

async function idle(s: Setup, n: number): Promise<void> {
  await tickUntil(s, () => false, 'nothing', n).catch(() => undefined);
}

const agent = (name: string, cfg: Record<string, unknown>, tools: ResolvedAgent['tools'] = []): ResolvedAgent => ({
  orgId: 'org_test',
  project: { id: 'proj_main', name: 'main' },
  agent: { id: `agent_${name}`, name, enabled: true },
  config: cfg,
  tools,
});

t.test(
  "an agent's bare built-in names are live built-ins; a stored tool of the same name does not replace one",
  async (t) => {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    const asked: string[][] = [];
    const resolveTools = s.store.resolveTools.bind(s.store);
    s.store.resolveTools = async (org, project, names) => (asked.push(names), resolveTools(org, project, names));
    const lookup = {
      id: 'tool_lookup',
      name: 'lookup',
      definition: {
        type: 'custom_context',
        name: 'lookup',
        description: 'Look up',
        execution_mode: 'sync',
        context: 'x',
      },
    };
    const impostor = {
      id: 'tool_kp',
      name: 'keypad_input',
      definition: {
        type: 'custom_context',
        name: 'keypad_input',
        description: 'Not the keypad',
        execution_mode: 'sync',
        context: 'x',
      },
    };
    s.store.tools.set('lookup', lookup);
    s.store.tools.set('keypad_input', impostor);
    s.store.agents.set(
      'desk',
      agent('desk', { tools: ['natural_conversation_ending', 'keypad_input', 'choose_not_to_respond', 'lookup'] }, [
        lookup,
        impostor,
      ]),
    );
    await s.conv.start({ kind: 'config', config: config({ agent: 'desk' }) });
    t.same(
      probe.options?.tools.map((x) => [x.name, x.description]),
      [
        [
          'natural_conversation_ending',
          'End the conversation when it has naturally come to its end (the user said goodbye or nothing is left to do).',
        ],
        ['keypad_input', 'Press keys on the phone keypad (DTMF), e.g. to navigate a phone menu.'],
        [
          'choose_not_to_respond',
          'Say nothing this turn: the user is not talking to you, is not finished, or asked you to wait.',
        ],
        ['lookup', 'Look up'],
      ],
      'the built-ins the agent names, in order, beside its stored tool',
    );
    t.same(probe.options?.tools[1].parameters.required, ['digits'], 'keypad_input takes its digits');
    probe.toolCall({ responseId: 'r1', callId: 'c1', name: 'keypad_input', arguments: { digits: '42' } });
    await until(() => s.client.count('dtmf') === 1, { what: 'the keys' });
    t.same(
      s.client.events('dtmf'),
      [{ type: 'dtmf', digits: '42' }],
      'the built-in ran, not the stored tool of its name',
    );
    t.same(asked, [], 'no stored tool looked up beyond the agent’s own');
    await s.conv.end('user');
    t.same(
      s.store
        .only()
        .items.flatMap((i) => i.tool_calls ?? [])
        .map((c) => c.tool),
      [{ id: 'built_in', name: 'keypad_input' }],
    );
  },
);

t.test(
  'inline config: bare built-in names are not looked up among stored tools; a transfer brings the new agent’s built-ins',
  async (t) => {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    const asked: string[][] = [];
    const resolveTools = s.store.resolveTools.bind(s.store);
    s.store.resolveTools = async (org, project, names) => (asked.push(names), resolveTools(org, project, names));
    s.store.tools.set('to_billing', {
      id: 'tool_tr',
      name: 'to_billing',
      definition: {
        type: 'built_in_transfer_to_agent',
        name: 'to_billing',
        description: 'Transfer',
        execution_mode: 'sync',
        agents_to_transfer_to: ['billing'],
      },
    });
    s.store.agents.set(
      'billing',
      agent('billing', {
        system_prompt: 'Billing.',
        tools: ['choose_not_to_respond'],
        built_in_tool_configs: { choose_not_to_respond: { respond_after_sec: 4 } },
      }),
    );
    await s.conv.start({ kind: 'config', config: config({ tools: ['keypad_input', 'to_billing'] }) });
    t.same(asked, [['to_billing']], 'only the stored name is resolved');
    t.same(
      probe.options?.tools.map((x) => x.name),
      ['keypad_input', 'to_billing'],
    );
    probe.toolCall({ responseId: 'r1', callId: 'c1', name: 'to_billing', arguments: { agent_name: 'billing' } });
    await until(() => probe.of('updateSession').length === 1, { what: 'the transfer' });
    t.same(
      probe.of('updateSession')[0].update.tools?.map((x) => x.name),
      ['choose_not_to_respond'],
      "the new agent's built-in",
    );
    s.conv.handle({ type: 'generate_reply' });
    probe.toolCall({
      responseId: probe.of('createResponse')[0].id,
      callId: 'c2',
      name: 'choose_not_to_respond',
      arguments: {},
    });
    await until(() => s.client.count('assistant_chose_not_to_respond') === 1, { what: 'silence' });
    s.timers.advance(4000);
    t.equal(probe.of('createResponse').length, 2, "with the new agent's respond_after_sec");
    await s.conv.end('user');
  },
);

t.test(
  'keypad_input speech_before_tool_call: suppressed says nothing; optional as the model did; required speaks a line first',
  async (t) => {
    const cases = [
      {
        mode: 'suppressed',
        responses: [
          { say: 'Pressing one for sales.', tool_calls: [{ name: 'keypad_input', arguments: { digits: '1' } }] },
        ],
        order: ['dtmf'],
        items: [[null, ['keypad_input']]],
      },
      {
        mode: 'optional',
        responses: [
          { say: 'Pressing one for sales.', tool_calls: [{ name: 'keypad_input', arguments: { digits: '1' } }] },
        ],
        order: null,
        items: [['Pressing one for sales.', ['keypad_input']]],
      },
      {
        mode: 'required',
        responses: [{ tool_calls: [{ name: 'keypad_input', arguments: { digits: '1' } }] }, { say: 'Pressing one.' }],
        order: ['assistant_started_speaking', 'audio', 'assistant_finished_speaking', 'dtmf'],
        items: [['Pressing one.', ['keypad_input']]],
      },
    ];
    for (const c of cases) {
      const s = await start({
        tools: ['keypad_input'],
        built_in_tool_configs: { keypad_input: { speech_before_tool_call: c.mode } },
        scripted_engine: { responses: c.responses },
      });
      s.conv.handle({ type: 'generate_reply' });
      const quiet = () =>
        s.client.count('assistant_started_speaking') === s.client.count('assistant_finished_speaking');
      await tickUntil(s, () => s.client.count('dtmf') === 1 && quiet(), `${c.mode}: the keys, and quiet`);
      await idle(s, 10);
      await s.conv.end('user');
      if (c.order) t.same(timeline(s), c.order, `${c.mode}: ${c.order.join(', ')}`);
      else {
        const order = timeline(s);
        t.ok(
          order.includes('assistant_finished_speaking') && order.includes('dtmf'),
          'optional: the speech played and the keys were pressed',
        );
      }
      t.same(assistantItems(s), c.items, `${c.mode}: the items`);
    }
  },
);

t.test(
  'natural_conversation_ending speech_before_tool_call: suppressed ends without the goodbye; required speaks one first',
  async (t) => {
    const cases = [
      {
        mode: 'suppressed',
        responses: [{ say: 'Goodbye!', end: true }],
        order: ['assistant_ended_conversation'],
        items: [[null, ['natural_conversation_ending']]],
      },
      {
        mode: 'optional',
        responses: [{ say: 'Goodbye!', end: true }],
        order: ['assistant_started_speaking', 'audio', 'assistant_finished_speaking', 'assistant_ended_conversation'],
        items: [['Goodbye!', ['natural_conversation_ending']]],
      },
      {
        mode: 'required',
        responses: [{ end: true }, { say: 'Goodbye, and thank you.', end: true }],
        order: ['assistant_started_speaking', 'audio', 'assistant_finished_speaking', 'assistant_ended_conversation'],
        items: [['Goodbye, and thank you.', ['natural_conversation_ending']]],
      },
    ];
    for (const c of cases) {
      const s = await start({
        tools: ['natural_conversation_ending'],
        built_in_tool_configs: { natural_conversation_ending: { speech_before_tool_call: c.mode } },
        scripted_engine: { end_tool: 'natural_conversation_ending', responses: c.responses },
      });
      s.conv.handle({ type: 'generate_reply' });
      await tickUntil(s, () => s.conv.state === 'ending' || s.conv.state === 'ended', `${c.mode}: the end`);
      t.equal(await s.conv.ended, 'assistant', `${c.mode}: ended by the assistant`);
      t.same(timeline(s), c.order, `${c.mode}: ${c.order.join(', ')}`);
      t.same(assistantItems(s), c.items, `${c.mode}: the items`);
    }
  },
);

t.test(
  'choose_not_to_respond: respond_after_sec from built_in_tool_configs brings a follow-up; without it the assistant stays silent',
  async (t) => {
    for (const respondAfterSec of [2, null]) {
      const s = await start({
        tools: ['choose_not_to_respond'],
        ...(respondAfterSec === null
          ? {}
          : { built_in_tool_configs: { choose_not_to_respond: { respond_after_sec: respondAfterSec } } }),
        websocket_timeout_sec: 3600,
        no_input_end_conversation_sec: 3600,
        scripted_engine: {
          responses: [
            { tool_calls: [{ name: 'choose_not_to_respond', arguments: {} }] },
            { say: 'Are you still there?' },
          ],
        },
      });
      s.conv.handle({ type: 'generate_reply' });
      await tickUntil(s, () => s.client.count('assistant_chose_not_to_respond') === 1, 'the silence');
      // No ticks (each would move the clock): a follow-up would show at once, its first frame sent as it arrives.
      const settle = () => new Promise((r) => setTimeout(r, 50));
      s.timers.advance(1999);
      await settle();
      t.equal(s.client.count('assistant_started_speaking'), 0, 'nothing said before respond_after_sec');
      if (respondAfterSec === null) {
        s.timers.advance(600_000);
        await settle();
        t.equal(s.client.count('assistant_started_speaking'), 0, 'null: silent ten minutes later');
      } else {
        await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'the follow-up');
      }
      await s.conv.end('user');
      t.same(
        timeline(s),
        respondAfterSec === null
          ? ['assistant_chose_not_to_respond']
          : ['assistant_chose_not_to_respond', 'assistant_started_speaking', 'audio', 'assistant_finished_speaking'],
        `respond_after_sec ${respondAfterSec}`,
      );
      const followUps = assistantItems(s).filter(([text]) => text !== null);
      t.same(followUps, respondAfterSec === null ? [] : [['Are you still there?', []]]);
    }
  },
);

t.test(
  'web_search: the query goes to the search server, the results to the model, which answers; a failed search is told to it',
  async (t) => {
    const search = await startFakeSearchServer();
    t.teardown(() => search.close());
    search.results.set('weather in paris', [
      { url: 'https://weather.example/paris', title: 'Paris weather', content: 'Sunny, 21 degrees.' },
    ]);
    for (const fail of [false, true]) {
      search.failWith = fail ? 500 : null;
      const s = await start(
        {
          tools: ['web_search'],
          scripted_engine: {
            responses: [
              {
                say: 'Let me search.',
                tool_calls: [{ name: 'web_search', arguments: { query: 'weather in paris' } }],
                after_tool_output: { say: 'It is sunny in Paris.' },
              },
            ],
          },
        },
        { webSearch: createWebSearch(search.url) },
      );
      s.conv.handle({ type: 'generate_reply' });
      await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 2, 'the answer with the results');
      await s.conv.end('user');
      t.same(
        assistantItems(s),
        [
          ['Let me search.', ['web_search']],
          ['It is sunny in Paris.', []],
        ],
        'the search on the speech before it, then the answer',
      );
      const entry = s.store.only().items.flatMap((i) => i.tool_calls ?? [])[0];
      if (fail) {
        t.equal(entry.error_message, 'search answered HTTP 500', 'the failure recorded');
      } else {
        t.same(entry.response_body, {
          query: 'weather in paris',
          results: [{ title: 'Paris weather', url: 'https://weather.example/paris', snippet: 'Sunny, 21 degrees.' }],
        });
        t.same(entry.tool, { id: 'built_in', name: 'web_search' });
      }
    }
    t.same(search.queries, ['weather in paris', 'weather in paris']);
  },
);

t.test(
  'web_search without a search server: warned of and not offered; a built-in config out of range is warned of too',
  async (t) => {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    await s.conv.start({
      kind: 'config',
      config: config({
        tools: ['web_search', 'keypad_input'],
        built_in_tool_configs: { keypad_input: { speech_before_tool_call: 'loudly', volume: 3 } },
      }),
    });
    t.same(
      probe.options?.tools.map((x) => x.name),
      ['keypad_input'],
      'web_search is not offered',
    );
    t.same(
      s.client.events('warning').map((w) => w.warning),
      [
        {
          message: 'web_search needs a search endpoint (PARLEY_WEB_SEARCH_URL is not set): the tool is not offered',
          code: 'tool_unavailable',
        },
        {
          message:
            'built_in_tool_configs.keypad_input.speech_before_tool_call must be required, optional or suppressed; the default (optional) applies',
          code: 'tool_unavailable',
        },
        {
          message: 'built_in_tool_configs.keypad_input.volume is not a setting of keypad_input; ignored',
          code: 'tool_unavailable',
        },
      ],
    );
    t.equal(probe.options?.tools[0].speechSuppressed, undefined, 'keypad_input keeps its default');
    await s.conv.end('user');
  },
);
