// Outbound call (POST /v1/conversations/outbound_call): the request and its OutboundCallConfig. The config is parsed
// without defaults: when it names an agent, the fields it sends override that agent's settings and the rest come from
// the agent; with no agent, OUTBOUND_CALL_DEFAULTS fill the rest (resolveOutboundCallConfig).
import { z } from 'zod';
import {
  MAX_ADDITIONAL_LANGUAGES_AUTO,
  agentName,
  backgroundNoise,
  configurationEndpoint,
  dataRetentionPolicy,
  intelligenceLevel,
  multilingualMode,
  outboundNumberPool,
  pronunciationDictionary,
  task,
  tenthMultiple,
  vendorModel,
} from './agents.js';
import { e164, lang, type UrlRules } from './common.js';

const unitInterval = z.number().min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1');

/** OutboundCallConfig: every field optional. */
export function outboundCallConfig(rules: UrlRules) {
  return z
    .object({
      agent: agentName,
      project: z.string().min(1),
      generate_welcome_message: z.boolean(),
      is_welcome_message_interruptible: z.boolean(),
      welcome_message: z.string().nullable(),
      system_prompt: z.string(),
      template_variables: z.record(z.string(), z.string()),
      voice_id: z.string().regex(/^[a-z][a-z0-9_-]*$/, 'must be a voice id (a short lowercase word)'),
      generate_no_input_poke_text: z.boolean(),
      no_input_poke_sec: z.number().int().positive().nullable(),
      no_input_poke_text: z.string(),
      no_input_end_conversation_sec: z.number().int().positive(),
      default_language: lang,
      additional_languages: z.array(lang),
      multilingual_mode: multilingualMode,
      push_to_talk: z.boolean(),
      intelligence_level: intelligenceLevel,
      vendor_model: vendorModel,
      boosted_keywords: z.array(z.string()),
      pronunciation_dictionary: pronunciationDictionary,
      min_words_to_interrupt: z.number().int().min(1),
      tools: z.array(z.string().min(1)),
      enable_redaction: z.boolean(),
      enable_watermarking: z.boolean(),
      model: z.enum(['merritt']),
      audio_speed: tenthMultiple,
      background_noise: backgroundNoise,
      background_noise_level: unitInterval,
      mcp_servers: z.array(z.string()),
      tasks: z.array(task),
      outbound_number_pool: outboundNumberPool.nullable(),
      enable_assistant_backchannel: z.boolean(),
      assistant_backchannel_aggressiveness: unitInterval,
      configuration_endpoint: configurationEndpoint(rules).nullable(),
      additional_params: z.record(z.string(), z.unknown()),
      data_retention_policy: dataRetentionPolicy,
      languages: z.array(lang),
    })
    .partial()
    .superRefine((cfg, ctx) => {
      const additional = cfg.additional_languages ?? [];
      if (cfg.default_language !== undefined && additional.includes(cfg.default_language)) {
        ctx.addIssue({
          code: 'custom',
          path: ['additional_languages'],
          message: `must not contain the default_language "${cfg.default_language}"`,
        });
      }
      if (cfg.multilingual_mode === 'auto' && additional.length > MAX_ADDITIONAL_LANGUAGES_AUTO) {
        ctx.addIssue({
          code: 'custom',
          path: ['additional_languages'],
          message: `at most ${MAX_ADDITIONAL_LANGUAGES_AUTO} additional languages when multilingual_mode is auto`,
        });
      }
      if (cfg.project !== undefined && cfg.agent === undefined) {
        ctx.addIssue({ code: 'custom', path: ['project'], message: 'applies only when an agent is named' });
      }
    });
}
export type OutboundCallConfig = z.infer<ReturnType<typeof outboundCallConfig>>;

/** POST /v1/conversations/outbound_call body. */
export function outboundCallBody(rules: UrlRules) {
  return z.object({
    to_phone_number: e164,
    config: outboundCallConfig(rules).optional(),
    dry_run: z.boolean().default(false),
  });
}
export type OutboundCallBody = z.infer<ReturnType<typeof outboundCallBody>>;

/** 200 (dry run) and 201 (call placed) bodies. */
export const outboundCallResponse = z.object({ conversation_id: z.string().nullable(), dry_run: z.boolean() });

export const DEFAULT_OUTBOUND_SYSTEM_PROMPT =
  'You are a helpful voice assistant on a phone call. Reply in one or two sentences.';

/** The defaults of OutboundCallConfig when no agent is named. */
export const OUTBOUND_CALL_DEFAULTS = {
  project: 'main',
  generate_welcome_message: false,
  is_welcome_message_interruptible: true,
  welcome_message: null,
  system_prompt: DEFAULT_OUTBOUND_SYSTEM_PROMPT,
  template_variables: {},
  voice_id: 'sabrina',
  generate_no_input_poke_text: false,
  no_input_poke_sec: null,
  no_input_poke_text: 'Are you still there?',
  no_input_end_conversation_sec: 180,
  default_language: 'en',
  additional_languages: [],
  multilingual_mode: 'request',
  push_to_talk: false,
  intelligence_level: 'standard',
  boosted_keywords: [],
  pronunciation_dictionary: [],
  min_words_to_interrupt: 1,
  tools: [],
  enable_redaction: false,
  enable_watermarking: false,
  model: 'merritt',
  audio_speed: 1,
  background_noise: null,
  background_noise_level: 0,
  mcp_servers: [],
  tasks: [],
  outbound_number_pool: null,
  enable_assistant_backchannel: false,
  assistant_backchannel_aggressiveness: 0.1,
  configuration_endpoint: null,
  additional_params: {},
  languages: ['en'],
} as const;

/**
 * The effective configuration of an outbound call: the agent's settings (when one is named) or the defaults,
 * overridden by what the config sends. A field sent as a deprecated `languages` list fills
 * `default_language`/`additional_languages` when those are not sent.
 */
export function resolveOutboundCallConfig<A extends Record<string, unknown>>(
  config: OutboundCallConfig | undefined,
  agentSettings?: A,
): Record<string, unknown> {
  const sent: Record<string, unknown> = { ...(config ?? {}) };
  if (config?.languages?.length && config.default_language === undefined) {
    sent.default_language = config.languages[0];
    if (config.additional_languages === undefined) sent.additional_languages = config.languages.slice(1);
  }
  for (const k of Object.keys(sent)) if (sent[k] === undefined) delete sent[k];
  const base: Record<string, unknown> = agentSettings
    ? { ...structuredClone(OUTBOUND_CALL_DEFAULTS), ...agentSettings }
    : structuredClone(OUTBOUND_CALL_DEFAULTS);
  return { ...base, ...sent };
}
