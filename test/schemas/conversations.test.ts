// The conversation schemas: the list query's rules (dates or timestamps, cursors, limit bounds, durations) and the
// record's nullability as the API gives it.
import t from 'tap';
import {
  conversation,
  conversationItem,
  getConversationQuery,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  listConversationsQuery,
  toolCallEntry,
} from '../../src/schemas/conversations.js';

t.test('list query defaults', async (t) => {
  const q = listConversationsQuery.parse({});
  t.same(q, { project: 'main', limit: LIST_LIMIT_DEFAULT, audio_container: 'wav.gz' });
  t.equal(LIST_LIMIT_DEFAULT, 20, 'the API default page size');
  t.same(getConversationQuery.parse({}), { audio_container: 'wav.gz' });
  t.same(getConversationQuery.parse({ audio_container: 'wav' }), { audio_container: 'wav' });
  t.notOk(getConversationQuery.safeParse({ audio_container: 'mp3' }).success);
});

t.test('limit: query strings are coerced, bounded 1..LIST_LIMIT_MAX', async (t) => {
  t.equal(listConversationsQuery.parse({ limit: '7' }).limit, 7);
  t.equal(listConversationsQuery.parse({ limit: String(LIST_LIMIT_MAX) }).limit, LIST_LIMIT_MAX);
  for (const bad of ['0', String(LIST_LIMIT_MAX + 1), '2.5', 'ten', '-3']) {
    t.notOk(listConversationsQuery.safeParse({ limit: bad }).success, `limit=${bad} is refused`);
  }
});

t.test('before and after together are refused, each alone is fine', async (t) => {
  const both = listConversationsQuery.safeParse({ before: 'conv_a', after: 'conv_b' });
  t.notOk(both.success);
  t.same(
    both.error?.issues.map((i) => i.path),
    [['before']],
  );
  t.ok(listConversationsQuery.safeParse({ before: 'conv_a' }).success);
  t.ok(listConversationsQuery.safeParse({ after: 'conv_b' }).success);
});

t.test('durations are whole non-negative seconds, min not above max', async (t) => {
  t.same(listConversationsQuery.parse({ duration_min: '3', duration_max: '3' }).duration_min, 3);
  t.notOk(listConversationsQuery.safeParse({ duration_min: '-1' }).success);
  t.notOk(listConversationsQuery.safeParse({ duration_max: '1.5' }).success);
  const inverted = listConversationsQuery.safeParse({ duration_min: '9', duration_max: '2' });
  t.notOk(inverted.success);
  t.same(inverted.error?.issues[0].path, ['duration_min']);
});

t.test('started_at bounds: a UTC date covers its whole day; a timestamp is exact', async (t) => {
  const q = listConversationsQuery.parse({ started_at_min: '2026-02-28', started_at_max: '2026-02-28' });
  t.same(q.started_at_min, { at: new Date('2026-02-28T00:00:00.000Z'), exclusive: false });
  t.same(
    q.started_at_max,
    { at: new Date('2026-03-01T00:00:00.000Z'), exclusive: true },
    'max date: before the next midnight',
  );
  const ts = listConversationsQuery.parse({
    started_at_min: '2026-11-22T10:15:00+02:00',
    started_at_max: '2026-11-22T10:15:00.5Z',
  });
  t.same(ts.started_at_min, { at: new Date('2026-11-22T08:15:00.000Z'), exclusive: false }, 'offsets are honoured');
  t.same(ts.started_at_max, { at: new Date('2026-11-22T10:15:00.500Z'), exclusive: false });
  for (const bad of ['2026-02-30', '2026-13-01', '26-01-01', 'yesterday', '2026-11-22T10:15', '1700000000']) {
    t.notOk(listConversationsQuery.safeParse({ started_at_min: bad }).success, `${bad} is refused`);
  }
});

const record = {
  id: 'conv_1',
  agent: null,
  workspace: 'acme',
  project: { id: 'proj_1', name: 'main' },
  external_id: null,
  origin: 'web',
  model: 'merritt',
  generate_welcome_message: false,
  is_welcome_message_interruptible: true,
  listen_only: false,
  welcome_message: null,
  template_variables: {},
  input_format: 'pcm_16000',
  output_format: 'pcm_16000',
  background_noise_level: 0,
  background_noise: null,
  live_transcript: null,
  post_call_transcript: null,
  duration_ms: 0,
  audio_url: null,
  started_at: null,
  ended_at: null,
  ended_by: null,
  boosted_keywords: null,
  pronunciation_dictionary: [],
  min_words_to_interrupt: 1,
  default_language: 'en',
  additional_languages: null,
  multilingual_mode: 'request',
  push_to_talk: false,
  no_input_poke_sec: null,
  no_input_end_conversation_sec: null,
  no_input_poke_text: null,
  task_results: {},
  items: [],
  call_info: null,
  analysis: { id: 'a', latencies_ms: [], interruptions_count: 0 },
};

t.test('the record: spec nullability; required fields are required', async (t) => {
  t.ok(conversation.safeParse(record).success, 'every (n) field may be null; optional fields may be absent');
  for (const field of ['workspace', 'project', 'origin', 'items', 'analysis', 'task_results', 'duration_ms']) {
    const { [field]: _dropped, ...rest } = record as Record<string, unknown>;
    t.notOk(conversation.safeParse(rest).success, `${field} is required`);
  }
  for (const field of ['workspace', 'model', 'pronunciation_dictionary', 'push_to_talk']) {
    t.notOk(conversation.safeParse({ ...record, [field]: null }).success, `${field} is not nullable`);
  }
  t.notOk(conversation.safeParse({ ...record, origin: 'fax' }).success, 'origin is the API enum');
  t.notOk(conversation.safeParse({ ...record, ended_by: 'timeout' }).success, 'ended_by is the API enum');
  t.ok(conversation.safeParse({ ...record, ended_by: 'configuration_endpoint_invalid_response' }).success);
  t.notOk(conversation.safeParse({ ...record, default_language: 'xx' }).success, 'default_language is LANG');
  t.ok(
    conversation.safeParse({
      ...record,
      origin: 'framework-agents-js',
      call_info: { from_phone_number: 'anonymous', to_phone_number: '+14155550100' },
    }).success,
  );
});

t.test('items and tool calls', async (t) => {
  const item = {
    id: 'i',
    item_idx: 0,
    role: 'user',
    live_transcript: null,
    post_call_transcript: null,
    duration_ms: 1.5,
    started_at: '2026-01-01T00:00:00.000Z',
  };
  t.ok(conversationItem.safeParse(item).success, 'live_transcript is null when redacted');
  t.notOk(conversationItem.safeParse({ ...item, role: 'system' }).success);
  t.notOk(conversationItem.safeParse({ ...item, item_idx: 0.5 }).success);
  const call = {
    id: 'c',
    tool: { id: 't', name: 'n' },
    request_body: null,
    response_body: null,
    timed_out: null,
    error_message: null,
  };
  t.ok(toolCallEntry.safeParse(call).success, 'the optional endpoint fields may be absent');
  t.ok(
    toolCallEntry.safeParse({ ...call, request_body: [1, 'x'], endpoint_called_at: null, response_status_code: null })
      .success,
  );
  t.notOk(toolCallEntry.safeParse({ ...call, response_body: 'text' }).success, 'response_body is a map');
});
