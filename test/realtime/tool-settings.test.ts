// Tool settings acting on a conversation over the STS socket, end to end: tools created and an agent upserted
// through the API, a client on the realtime port, the scripted engine in the media worker, PostgreSQL. Two of the
// settings: forbid_tool_call_after_speech on a stored WebSocket tool (the call after speech never reaches the
// client, the speech is kept), and speech_before_tool_call `required` on the bare built-in keypad_input through
// built_in_tool_configs (a line is spoken before the keys); and the bare built-in web_search through
// PARLEY_WEB_SEARCH_URL (a fake SearxNG server).
import t from 'tap';
import { startFakeSearchServer } from '../fakes/search-server.js';
import { startRealtimeServer } from '../helpers/realtime.js';
import { api } from '../helpers/server.js';

t.setTimeout(120_000);

const SHOWN = new Set(['assistant_started_speaking', 'assistant_finished_speaking', 'tool_call', 'dtmf']);

t.test(
  'over the STS socket: a call after speech is dropped, a line comes before the keys, web_search runs',
  async (t) => {
    const search = await startFakeSearchServer();
    t.teardown(() => search.close());
    search.results.set('weather in oslo', [{ url: 'https://weather.example/oslo', title: 'Oslo', content: 'Snow.' }]);
    const server = await startRealtimeServer({
      env: { PARLEY_RECONNECT_GRACE_SEC: '0', PARLEY_ENGINE_DEFAULT: 'scripted', PARLEY_WEB_SEARCH_URL: search.url },
    });
    t.teardown(() => server.close());
    const http = api(server);

    const tool = await http.post('/v1/tools', {
      name: 'lookup',
      description: 'Look an order up',
      type: 'custom_websocket',
      execution_mode: 'sync',
      forbid_tool_call_after_speech: true,
    });
    t.equal(tool.status, 201, 'the WebSocket tool');
    const desk = await http.put('/v1/agents/upsert', {
      name: 'desk',
      system_prompt: 'Front desk.',
      tools: ['lookup', 'keypad_input', 'web_search'],
      built_in_tool_configs: { keypad_input: { speech_before_tool_call: 'required' } },
    });
    t.equal(desk.status, 200, 'the agent with bare built-in names');

    const { client, id } = await server.startConversation({
      agent: 'desk',
      input_format: 'pcm_16000',
      output_format: 'pcm_16000',
      scripted_engine: {
        responses: [
          {
            say: 'Let me check.',
            tool_calls: [{ name: 'lookup', arguments: { order: 7 } }],
            after_tool_output: { say: 'Found it.' },
          },
          { tool_calls: [{ name: 'keypad_input', arguments: { digits: '1' } }] },
          { say: 'Pressing one.' },
          {
            tool_calls: [{ name: 'web_search', arguments: { query: 'weather in oslo' } }],
            after_tool_output: { say: 'It is snowing in Oslo.' },
          },
        ],
      },
    });
    const finished = (n: number) => client.until(() => client.events('assistant_finished_speaking').length >= n);

    client.send({ type: 'generate_reply' });
    await finished(1);
    client.send({ type: 'generate_reply' });
    await client.until(() => client.events('dtmf').length === 1);
    client.send({ type: 'generate_reply' });
    await finished(3);
    t.same(search.queries, ['weather in oslo'], 'the search went to PARLEY_WEB_SEARCH_URL');

    t.same(
      client.got.order.filter((ty) => SHOWN.has(ty)),
      [
        'assistant_started_speaking',
        'assistant_finished_speaking',
        'assistant_started_speaking',
        'assistant_finished_speaking',
        'dtmf',
        'assistant_started_speaking',
        'assistant_finished_speaking',
      ],
      'the first response spoke and its call never reached the client; the line, then the keys; the answer with the results',
    );
    t.same(client.events('dtmf'), [{ type: 'dtmf', digits: '1' }]);
    client.close();

    const conv = await server.endedConversation(id);
    const items = (
      conv.items as {
        role: string;
        live_transcript: string | null;
        tool_calls?: { tool: { name: string }; error_message: string | null; response_body: unknown }[];
      }[]
    )
      .filter((i) => i.role === 'assistant')
      .map((i) => [i.live_transcript, (i.tool_calls ?? []).map((c) => [c.tool.name, c.error_message])]);
    t.same(
      items,
      [
        [
          'Let me check.',
          [
            [
              'lookup',
              'not executed: called after the assistant spoke in this response (forbid_tool_call_after_speech)',
            ],
          ],
        ],
        ['Pressing one.', [['keypad_input', null]]],
        [null, [['web_search', null]]],
        ['It is snowing in Oslo.', []],
      ],
      'the record: the dropped call with why, the keys on the line before them, the search and its answer',
    );
  },
);
