import t from 'tap';
import {
  AGENT_DEFAULTS,
  agentDefaults,
  agentRuleIssues,
  agentUpdateBody,
  agentUpsertBody,
  applyDeprecatedLanguages,
  type AgentConfig,
} from '../../src/schemas/agents.js';

const rules = { PARLEY_ALLOW_PRIVATE_ENDPOINTS: false };
const upsert = agentUpsertBody(rules);
const update = agentUpdateBody(rules);

/** The dotted paths of the issues a parse reports (as the API's param_errors keys them). */
function paths(result: { success: boolean; error?: { issues: { path: PropertyKey[] }[] } }): string[] {
  return result.success ? [] : result.error!.issues.map((i) => i.path.map(String).join('.'));
}

t.test('upsert requires a name in lowercase letters, digits and hyphens', async (t) => {
  t.same(paths(upsert.safeParse({})), ['name']);
  t.same(paths(upsert.safeParse({ name: 'Sales_Bot' })), ['name']);
  t.same(paths(upsert.safeParse({ name: 'sales-bot-2' })), []);
  t.same(paths(upsert.safeParse({ name: 'ok', slug: 'Bad Slug' })), ['slug']);
});

t.test('update accepts an empty body and any subset of fields', async (t) => {
  t.same(update.parse({}), {});
  t.same(update.parse({ voice_id: 'sabrina' }), { voice_id: 'sabrina' });
});

t.test('E.164 is required for every phone number field', async (t) => {
  t.same(paths(update.safeParse({ custom_phone_numbers: ['+14155550100', '4155550101'] })), ['custom_phone_numbers.1']);
  t.same(paths(update.safeParse({ inbound_rollout_forward_phone_number: '0044 20' })), [
    'inbound_rollout_forward_phone_number',
  ]);
  t.same(paths(update.safeParse({ outbound_number_pool: { active: ['+1'], blocked: [] } })), [
    'outbound_number_pool.active.0',
  ]);
  t.same(paths(update.safeParse({ custom_phone_number: 'abc' })), ['custom_phone_number']);
});

t.test('custom phone numbers must be unique', async (t) => {
  t.same(paths(update.safeParse({ custom_phone_numbers: ['+14155550100', '+14155550100'] })), [
    'custom_phone_numbers.1',
  ]);
});

t.test('language fields take only LANG codes', async (t) => {
  t.same(paths(update.safeParse({ default_language: 'xx' })), ['default_language']);
  t.same(paths(update.safeParse({ additional_languages: ['fil', 'yue', 'klingon'] })), ['additional_languages.2']);
  t.same(paths(update.safeParse({ languages: ['en', 'qq'] })), ['languages.1']);
});

t.test('audio_speed must be a multiple of 0.1, judged without float error', async (t) => {
  for (const ok of [1.2, 0.7, 1.1, 0.3, 2, 1.5000000000000002])
    t.same(paths(update.safeParse({ audio_speed: ok })), [], `${ok}`);
  for (const bad of [1.25, 0.05, 1.01])
    t.same(paths(update.safeParse({ audio_speed: bad })), ['audio_speed'], `${bad}`);
  t.same(paths(update.safeParse({ audio_speed: 0 })), ['audio_speed']);
});

t.test('ranges: levels between 0 and 1, integers where the API says integer', async (t) => {
  t.same(paths(update.safeParse({ background_noise_level: 1.5 })), ['background_noise_level']);
  t.same(paths(update.safeParse({ inbound_rollout: -0.1 })), ['inbound_rollout']);
  t.same(paths(update.safeParse({ vad_threshold: 2 })), ['vad_threshold']);
  t.same(paths(update.safeParse({ assistant_backchannel_aggressiveness: -1 })), [
    'assistant_backchannel_aggressiveness',
  ]);
  t.same(paths(update.safeParse({ websocket_timeout_sec: 1.5 })), ['websocket_timeout_sec']);
  t.same(paths(update.safeParse({ min_words_to_interrupt: 0 })), ['min_words_to_interrupt']);
  t.same(paths(update.safeParse({ vad_prebuffer_duration_ms: -1 })), ['vad_prebuffer_duration_ms']);
});

t.test('VAD durations within what the VAD accepts (a longer one could never start a conversation)', async (t) => {
  t.same(
    paths(
      update.safeParse({
        vad_prebuffer_duration_ms: 10_000,
        vad_min_speech_duration_ms: 10_000,
        vad_min_silence_duration_ms: 60_000,
      }),
    ),
    [],
  );
  t.same(paths(update.safeParse({ vad_prebuffer_duration_ms: 10_001 })), ['vad_prebuffer_duration_ms']);
  t.same(paths(update.safeParse({ vad_min_speech_duration_ms: 10_001 })), ['vad_min_speech_duration_ms']);
  t.same(paths(update.safeParse({ vad_min_silence_duration_ms: 60_001 })), ['vad_min_silence_duration_ms']);
});

t.test('enums: audio format, background noise, multilingual mode, model, observability provider', async (t) => {
  t.same(paths(update.safeParse({ audio_format: 'mp3' })), ['audio_format']);
  t.same(paths(update.safeParse({ background_noise: 'street' })), ['background_noise']);
  t.same(paths(update.safeParse({ background_noise: null })), []);
  t.same(paths(update.safeParse({ multilingual_mode: 'always' })), ['multilingual_mode']);
  t.same(paths(update.safeParse({ vendor_model: 'vendor_v9' })), ['vendor_model']);
  t.same(paths(update.safeParse({ observability_integrations: ['nope'] })), ['observability_integrations.0']);
  t.same(paths(update.safeParse({ phone_number: 'random' })), ['phone_number']);
  t.same(paths(update.safeParse({ timezone: 'Mars/Base' })), ['timezone']);
  t.same(paths(update.safeParse({ timezone: 'Europe/Paris' })), []);
});

t.test('pronunciation words must be unique', async (t) => {
  const dict = [
    { word: 'Parley', pronunciation: 'PAR-lee' },
    { word: 'Parley', pronunciation: 'par-LAY' },
  ];
  t.same(paths(update.safeParse({ pronunciation_dictionary: dict })), ['pronunciation_dictionary.1.word']);
});

t.test('DataRetentionPolicy takes form A or form B only', async (t) => {
  t.same(paths(update.safeParse({ data_retention_policy: { zero_data_retention: true } })), []);
  const b = {
    zero_data_retention: false,
    transcripts: { delete_after_hours: 24 },
    audio_recordings: { delete_after_hours: null },
  };
  t.same(paths(update.safeParse({ data_retention_policy: b })), []);
  t.not(paths(update.safeParse({ data_retention_policy: { zero_data_retention: false } })).length, 0);
  t.not(paths(update.safeParse({ data_retention_policy: {} })).length, 0);
  const fractional = { ...b, transcripts: { delete_after_hours: 1.5 } };
  t.same(paths(update.safeParse({ data_retention_policy: fractional })), [
    'data_retention_policy.transcripts.delete_after_hours',
  ]);
});

t.test('ConfigurationEndpoint: public HTTPS without credentials, timeout default 3000', async (t) => {
  const parsed = update.parse({ configuration_endpoint: { url: 'https://config.example.com/agent' } });
  t.equal(parsed.configuration_endpoint?.timeout_ms, 3000);
  for (const url of [
    'http://config.example.com',
    'https://user:pw@config.example.com',
    'https://127.0.0.1/x',
    'https://10.1.2.3',
    'https://localhost:8443',
    'https://[::1]/',
  ]) {
    t.same(paths(update.safeParse({ configuration_endpoint: { url } })), ['configuration_endpoint.url'], url);
  }
  const local = agentUpdateBody({ PARLEY_ALLOW_PRIVATE_ENDPOINTS: true });
  t.same(paths(local.safeParse({ configuration_endpoint: { url: 'https://127.0.0.1:9999/cfg' } })), []);
  t.same(paths(local.safeParse({ configuration_endpoint: { url: 'http://127.0.0.1:9999/cfg' } })), [
    'configuration_endpoint.url',
  ]);
});

t.test('integrations are accepted by update and refused by upsert', async (t) => {
  const integrations = [{ account_id: 'a', account_name: null, action_names: ['x'], app_slug: 'crm' }];
  t.same(paths(update.safeParse({ integrations })), []);
  t.same(paths(upsert.safeParse({ name: 'a', integrations })), ['integrations']);
});

function cfg(over: Partial<AgentConfig>): AgentConfig {
  return { ...agentDefaults(), ...over };
}
const issuePaths = (c: AgentConfig, hasPhone = false) => agentRuleIssues(c, { hasPhone }).map((i) => i.path);

t.test('defaults satisfy every cross-field rule', async (t) => {
  t.same(issuePaths(agentDefaults()), []);
  t.equal(AGENT_DEFAULTS.voice_id, 'grant');
  t.equal(AGENT_DEFAULTS.audio_format, 'pcm_44100');
  t.equal(AGENT_DEFAULTS.audio_speed, 1.2);
  t.equal(AGENT_DEFAULTS.websocket_timeout_sec, 60);
  t.equal(AGENT_DEFAULTS.no_input_end_conversation_sec, 180);
  t.equal(AGENT_DEFAULTS.inbound_rollout, 1);
  t.equal(AGENT_DEFAULTS.vad_threshold, 0.38);
  t.match(AGENT_DEFAULTS.system_prompt, /\{\{system_date\}\}.*\{\{system_time\}\}/s);
  for (const v of ['system_date', 'system_year', 'system_weekday', 'system_time', 'system_conversation_timezone']) {
    t.ok(AGENT_DEFAULTS.system_prompt.includes(`{{${v}}}`), v);
  }
});

t.test('additional_languages must not contain default_language', async (t) => {
  t.same(issuePaths(cfg({ default_language: 'de', additional_languages: ['fr', 'de'] })), ['additional_languages']);
});

t.test('at most 2 additional languages when multilingual_mode is auto', async (t) => {
  const three: Partial<AgentConfig> = { additional_languages: ['fr', 'de', 'es'] };
  t.same(issuePaths(cfg({ ...three, multilingual_mode: 'auto' })), ['additional_languages']);
  t.same(issuePaths(cfg({ ...three, multilingual_mode: 'request' })), []);
  t.same(issuePaths(cfg({ additional_languages: ['fr', 'de'], multilingual_mode: 'auto' })), []);
});

t.test(
  'inbound_rollout below 1 needs a phone number and a forward number; at 1 the forward number is null',
  async (t) => {
    t.same(issuePaths(cfg({ inbound_rollout: 0.5 })), ['inbound_rollout', 'inbound_rollout_forward_phone_number']);
    t.same(issuePaths(cfg({ inbound_rollout: 0.5, inbound_rollout_forward_phone_number: '+14155550100' }), true), []);
    t.same(issuePaths(cfg({ inbound_rollout: 0.5, inbound_rollout_forward_phone_number: '+14155550100' }), false), [
      'inbound_rollout',
    ]);
    t.same(issuePaths(cfg({ inbound_rollout: 1, inbound_rollout_forward_phone_number: '+14155550100' }), true), [
      'inbound_rollout_forward_phone_number',
    ]);
  },
);

t.test('listen-only inbound needs a nonempty message', async (t) => {
  t.same(issuePaths(cfg({ listen_only_inbound_enabled: true })), ['listen_only_inbound_message']);
  t.same(issuePaths(cfg({ listen_only_inbound_enabled: true, listen_only_inbound_message: '  ' })), [
    'listen_only_inbound_message',
  ]);
  t.same(
    issuePaths(cfg({ listen_only_inbound_enabled: true, listen_only_inbound_message: 'This call is recorded.' })),
    [],
  );
});

t.test('external_storage_policy needs zero data retention and excludes redaction', async (t) => {
  t.same(issuePaths(cfg({ external_storage_policy: 'archive' })), ['external_storage_policy']);
  const zdr = { zero_data_retention: true } as const;
  t.same(issuePaths(cfg({ external_storage_policy: 'archive', data_retention_policy: zdr })), []);
  t.same(issuePaths(cfg({ external_storage_policy: 'archive', data_retention_policy: zdr, enable_redaction: true })), [
    'external_storage_policy',
  ]);
});

t.test('deprecated languages fill default_language and additional_languages when not sent', async (t) => {
  t.same(applyDeprecatedLanguages({ languages: ['de', 'fr'] }), {
    languages: ['de', 'fr'],
    default_language: 'de',
    additional_languages: ['fr'],
  });
  t.same(applyDeprecatedLanguages({ languages: ['de'], default_language: 'en' }), {
    languages: ['de'],
    default_language: 'en',
    additional_languages: [],
  });
});
