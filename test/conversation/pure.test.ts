// Pure parts of the conversation engine: latency, variables, the lifecycle table, webhook request building,
// settings layering.
import t from 'tap';
import { speechEndedAtMs, turnLatencyMs } from '../../src/conversation/latency.js';
import { substitute, systemVariables, templateValues } from '../../src/conversation/variables.js';
import { transition } from '../../src/conversation/conversation.fsm.js';
import { webhookRequest } from '../../src/conversation/tools/webhook.js';
import { applyConfig, baseSettings } from '../../src/conversation/settings.js';

t.test('latency: from the last voiced sample (before the hangover) to the first frame sent', async (t) => {
  const end = { reportedAtMs: 10_000, samplesFed: 16_000 * 3, lastVoicedSample: 16_000 * 2.2, sampleRate: 16_000 };
  t.equal(speechEndedAtMs(end), 10_000 - 800, '800 ms of hangover fed after the last voiced sample');
  t.equal(turnLatencyMs(end, 10_150), 950);
  t.equal(turnLatencyMs({ ...end, lastVoicedSample: end.samplesFed }, 10_000), 0);
  t.equal(turnLatencyMs(end, 0), 0, 'never negative');
});

t.test('variables: given values over defaults, system variables in the time zone, unknown names kept', async (t) => {
  const at = new Date(Date.UTC(2026, 11, 31, 23, 30));
  const sys = systemVariables(at, 'Asia/Tokyo');
  t.same(sys, {
    system_date: 'January 1',
    system_time: '08:30',
    system_weekday: 'Friday',
    system_year: '2027',
    system_conversation_timezone: 'Asia/Tokyo',
  });
  t.equal(systemVariables(at, 'UTC').system_year, '2026');
  const values = templateValues(
    { name: { default_value: 'friend' }, city: { default_value: 'Paris' } },
    { name: 'Ada' },
  );
  t.equal(
    substitute('Hi {{name}} in {{ city }} on {{system_weekday}}; {{missing}}', { ...values, ...sys }),
    'Hi Ada in Paris on Friday; {{missing}}',
  );
});

t.test('lifecycle table: the only paths, ended_by on every end', async (t) => {
  t.equal(transition('created', 'configure'), 'configuring');
  t.equal(transition('configuring', 'configured'), 'ready');
  t.equal(transition('ready', 'activity'), 'active');
  t.equal(transition('active', 'end'), 'ending');
  t.equal(transition('ending', 'saved'), 'ended');
  t.equal(transition('created', 'activity'), null);
  t.equal(transition('ending', 'end'), null, 'a second end is refused');
  t.equal(transition('ended', 'end'), null);
});

t.test('webhook request: placement in path, query and body; reserved parameters', async (t) => {
  const reserved = {
    conversation_id: 'conv_1',
    call_info: null,
    from_phone_number: null,
    to_phone_number: null,
    telephony_call_sid: null,
    pre_tool_text: '',
  };
  const req = webhookRequest(
    {
      name: 'x',
      description: 'd',
      type: 'custom_webhook',
      execution_mode: 'sync',
      parameters: {
        type: 'object',
        properties: { id: { type: 'string' }, q: { type: 'string' }, n: { type: 'integer' } },
      },
      parameter_locations: { id: 'url_path', q: 'query_string' },
      endpoint_method: 'GET',
      endpoint_url: 'https://api.example.com/a/{id}/b',
    },
    { id: 'a b', q: 'z', n: 3 },
    reserved,
  );
  t.equal(req.url, 'https://api.example.com/a/a%20b/b?q=z');
  t.same(req.query, { q: 'z' });
  t.same(req.body, { n: 3, ...reserved });
  t.equal(req.method, 'GET');
});

t.test('settings: defaults, then the agent, then config, then overrides', async (t) => {
  const base = baseSettings({ system_prompt: 'agent prompt', voice_id: 'sarah', min_words_to_interrupt: 2 });
  t.equal(base.no_input_end_conversation_sec, 180, 'upsert default');
  t.equal(base.voice_id, 'sarah');
  const s = applyConfig(base, {
    type: 'config',
    voice_id: 'grant',
    input_format: 'mulaw_8000',
    tools: [
      'a',
      { type: 'custom_websocket', tool_schema: { type: 'function', function: { name: 'b', description: 'd' } } },
    ],
  });
  t.equal(s.voice_id, 'grant');
  t.equal(s.system_prompt, 'agent prompt');
  t.equal(s.min_words_to_interrupt, 2);
  t.equal(s.inputFormat, 'mulaw_8000');
  t.same(s.tools, ['a']);
  t.equal(s.inlineTools[0].tool_schema.function.name, 'b');
});
