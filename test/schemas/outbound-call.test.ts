import t from 'tap';
import {
  OUTBOUND_CALL_DEFAULTS,
  outboundCallBody,
  resolveOutboundCallConfig,
} from '../../src/schemas/outbound-call.js';

const body = outboundCallBody({ PARLEY_ALLOW_PRIVATE_ENDPOINTS: false });
function paths(input: unknown): string[] {
  const r = body.safeParse(input);
  return r.success ? [] : r.error.issues.map((i) => i.path.map(String).join('.'));
}

t.test('to_phone_number is required and E.164; dry_run defaults to false', async (t) => {
  t.same(paths({}), ['to_phone_number']);
  t.same(paths({ to_phone_number: '555 0100' }), ['to_phone_number']);
  t.same(body.parse({ to_phone_number: '+14155550100' }), { to_phone_number: '+14155550100', dry_run: false });
});

t.test('config fields follow the agent rules', async (t) => {
  const to = '+14155550100';
  t.same(paths({ to_phone_number: to, config: { default_language: 'de', additional_languages: ['de'] } }), [
    'config.additional_languages',
  ]);
  t.same(
    paths({ to_phone_number: to, config: { multilingual_mode: 'auto', additional_languages: ['fr', 'es', 'it'] } }),
    ['config.additional_languages'],
  );
  t.same(paths({ to_phone_number: to, config: { audio_speed: 1.15 } }), ['config.audio_speed']);
  t.same(paths({ to_phone_number: to, config: { model: 'other' } }), ['config.model']);
  t.same(paths({ to_phone_number: to, config: { configuration_endpoint: { url: 'http://cfg.example.com' } } }), [
    'config.configuration_endpoint.url',
  ]);
  t.same(
    paths({ to_phone_number: to, config: { outbound_number_pool: { active: ['+14155550101'], blocked: ['x'] } } }),
    ['config.outbound_number_pool.blocked.0'],
  );
  t.same(paths({ to_phone_number: to, config: { project: 'main' } }), ['config.project']);
  t.same(
    paths({
      to_phone_number: to,
      config: { agent: 'sales', project: 'main', template_variables: { a: 'b' }, additional_params: { x: [1] } },
    }),
    [],
  );
});

t.test('without an agent the API defaults fill the config; sent fields win', async (t) => {
  const cfg = resolveOutboundCallConfig(
    body.parse({ to_phone_number: '+14155550100', config: { voice_id: 'grant' } }).config,
  );
  t.equal(cfg.voice_id, 'grant');
  t.equal(cfg.audio_speed, 1);
  t.equal(cfg.model, 'merritt');
  t.equal(cfg.no_input_end_conversation_sec, 180);
  t.equal(resolveOutboundCallConfig(undefined).voice_id, OUTBOUND_CALL_DEFAULTS.voice_id);
});

t.test('with an agent its settings are the base and the config overrides them', async (t) => {
  const cfg = resolveOutboundCallConfig(
    { agent: 'sales', welcome_message: 'Hi' },
    { voice_id: 'grant', welcome_message: 'Hello', audio_speed: 1.2 },
  );
  t.equal(cfg.voice_id, 'grant');
  t.equal(cfg.audio_speed, 1.2);
  t.equal(cfg.welcome_message, 'Hi');
});

t.test('deprecated languages fill the language fields', async (t) => {
  const cfg = resolveOutboundCallConfig({ languages: ['fr', 'de'] });
  t.equal(cfg.default_language, 'fr');
  t.same(cfg.additional_languages, ['de']);
});
