// Agents: the writable fields, their upsert defaults, the cross-field
// rules, and the response record. The one source of truth for agent requests and records.
import { z } from 'zod';
import { e164, httpsPublicUrl, lang, type UrlRules } from './common.js';

/** Agent names and slugs: lowercase letters, digits, hyphens. */
export const agentName = z
  .string()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .regex(/^[a-z0-9-]+$/, 'must contain only lowercase letters, digits and hyphens');

export const AUDIO_FORMATS = ['pcm_44100', 'pcm_24000', 'pcm_16000', 'pcm_8000', 'mulaw_8000'] as const;
export const BACKGROUND_NOISES = ['office', 'call-center', 'coffee-shop'] as const;
export const MULTILINGUAL_MODES = ['auto', 'request', 'initial'] as const;
export const VENDOR_MODELS = ['vendor_v0_5', 'vendor_v1', 'vendor_v1_1'] as const;
/** The one observability provider: Parley exports traces over OpenTelemetry. */
export const OBSERVABILITY_PROVIDERS = ['opentelemetry'] as const;
/** multilingual_mode `auto` (language detected per user turn): at most 2 additional languages. */
export const MAX_ADDITIONAL_LANGUAGES_AUTO = 2;

export const backgroundNoise = z.enum(BACKGROUND_NOISES);
export const multilingualMode = z.enum(MULTILINGUAL_MODES);
export const vendorModel = z.enum(VENDOR_MODELS);
export const intelligenceLevel = z.enum(['standard', 'high']);

/** A double that is a multiple of 0.1, judged in tenths so that 1.2 (1.2000000000000002 * 10) passes. */
export const tenthMultiple = z
  .number()
  .positive('must be positive')
  .refine((v) => Math.abs(v * 10 - Math.round(v * 10)) < 1e-9, 'must be a multiple of 0.1');

const unitInterval = z.number().min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1');
const nonNegativeInt = z.number().int().min(0);
/**
 * The VAD's accepted ranges (native/src/vad.h, Vad::kMax*; the addon's vadLimits): an agent outside them could never
 * start a conversation. Repeated here to keep schemas free of native code; test/native/vad-limits.test.ts fails when
 * they differ.
 */
const VAD_MAX_PREBUFFER_MS = 10_000;
const VAD_MAX_MIN_SPEECH_MS = 10_000;
const VAD_MAX_MIN_SILENCE_MS = 60_000;

/** One of an agent's `tasks`. */
export const task = z.object({ name: z.string().min(1), description: z.string() });

/** pronunciation_dictionary: words spoken as given; words must be unique in a list. */
export const pronunciationDictionary = z
  .array(z.object({ word: z.string().min(1), pronunciation: z.string().min(1) }))
  .superRefine((items, ctx) => {
    const seen = new Set<string>();
    items.forEach((item, i) => {
      if (seen.has(item.word))
        ctx.addIssue({ code: 'custom', path: [i, 'word'], message: `duplicate word "${item.word}"` });
      seen.add(item.word);
    });
  });

/** A list of E.164 numbers, all unique. */
export const uniqueE164List = z.array(e164).superRefine((numbers, ctx) => {
  const seen = new Set<string>();
  numbers.forEach((n, i) => {
    if (seen.has(n)) ctx.addIssue({ code: 'custom', path: [i], message: `duplicate phone number ${n}` });
    seen.add(n);
  });
});

/** outbound_number_pool: the numbers outbound calls may use, and those they may not. */
export const outboundNumberPool = z.object({ active: z.array(e164), blocked: z.array(e164) });

/** data_retention_policy: retain nothing (zero data retention), or keep transcripts and audio (hours; null: always). */
const retentionHours = z.object({ delete_after_hours: z.number().int().positive().nullable() });
export const dataRetentionPolicy = z.discriminatedUnion('zero_data_retention', [
  z.object({ zero_data_retention: z.literal(true) }),
  z.object({ zero_data_retention: z.literal(false), transcripts: retentionHours, audio_recordings: retentionHours }),
]);
export type DataRetentionPolicy = z.infer<typeof dataRetentionPolicy>;

export const templateVariable = z.object({
  default_value: z.string(),
  is_boosted_keyword: z.boolean().optional(),
});

export const agentIntegration = z.object({
  account_id: z.string(),
  account_name: z.string().nullable(),
  action_names: z.array(z.string()),
  app_slug: z.string(),
});

/** configuration_endpoint: called at a conversation's start; the default timeout is 3000 ms. */
export const CONFIGURATION_ENDPOINT_DEFAULT_TIMEOUT_MS = 3000;
export function configurationEndpoint(rules: UrlRules) {
  return z.object({
    url: httpsPublicUrl(rules),
    headers: z.record(z.string(), z.string()).optional(),
    timeout_ms: z.number().int().positive().default(CONFIGURATION_ENDPOINT_DEFAULT_TIMEOUT_MS),
  });
}
export type ConfigurationEndpoint = z.infer<ReturnType<typeof configurationEndpoint>>;

/** Every writable field except the name, with its field-level rules. All optional here; defaults below. */
const writableShape = (rules: UrlRules) => ({
  slug: agentName,
  phone_number: z.enum(['assign-automatically', 'custom']).nullable(),
  custom_phone_numbers: uniqueE164List,
  timezone: z.string().refine(isTimeZone, 'must be an IANA time zone such as Europe/Paris'),
  voice_id: z.string().regex(/^[a-z][a-z0-9_-]*$/, 'must be a voice id (a short lowercase word)'),
  audio_format: z.enum(AUDIO_FORMATS),
  audio_speed: tenthMultiple,
  background_noise_level: unitInterval,
  background_noise: backgroundNoise.nullable(),
  generate_welcome_message: z.boolean(),
  is_welcome_message_interruptible: z.boolean(),
  websocket_timeout_sec: z.number().int().positive(),
  listen_only_inbound_enabled: z.boolean(),
  listen_only_inbound_message: z.string().nullable(),
  welcome_message: z.string().nullable(),
  system_prompt: z.string(),
  template_variables: z.record(z.string(), templateVariable),
  tools: z.array(z.string().min(1)),
  built_in_tool_configs: z.record(z.string(), z.record(z.string(), z.unknown())),
  tasks: z.array(task),
  generate_no_input_poke_text: z.boolean(),
  no_input_poke_sec: z.number().int().positive().nullable(),
  no_input_poke_text: z.string(),
  no_input_end_conversation_sec: z.number().int().positive(),
  enable_assistant_backchannel: z.boolean(),
  assistant_backchannel_aggressiveness: unitInterval,
  data_retention_policy: dataRetentionPolicy,
  outbound_number_pool: outboundNumberPool.nullable(),
  procedure_ids: z.array(z.string()),
  integrations: z.array(agentIntegration),
  default_language: lang,
  additional_languages: z.array(lang),
  multilingual_mode: multilingualMode,
  push_to_talk: z.boolean(),
  intelligence_level: intelligenceLevel,
  vendor_model: vendorModel.nullable(),
  boosted_keywords: z.array(z.string()),
  pronunciation_dictionary: pronunciationDictionary,
  min_words_to_interrupt: z.number().int().min(1),
  configuration_endpoint: configurationEndpoint(rules).nullable(),
  inbound_rollout: unitInterval,
  inbound_rollout_forward_phone_number: e164.nullable(),
  vad_prebuffer_duration_ms: nonNegativeInt.max(VAD_MAX_PREBUFFER_MS),
  vad_min_speech_duration_ms: nonNegativeInt.max(VAD_MAX_MIN_SPEECH_MS),
  vad_min_silence_duration_ms: nonNegativeInt.max(VAD_MAX_MIN_SILENCE_MS),
  vad_threshold: unitInterval,
  enable_redaction: z.boolean(),
  enable_watermarking: z.boolean(),
  mcp_server_ids: z.array(z.string()),
  observability_integrations: z.array(z.enum(OBSERVABILITY_PROVIDERS)),
  external_storage_policy: z.string().min(1).nullable(),
  custom_phone_number: e164.nullable(),
  languages: z.array(lang),
});
type WritableShape = ReturnType<typeof writableShape>;

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** PATCH /v1/agents/{nameOrId}: every writable field optional; only what is sent changes. */
export function agentUpdateBody(rules: UrlRules) {
  return z.object({ name: agentName, ...writableShape(rules) }).partial();
}
export type AgentUpdateBody = z.infer<ReturnType<typeof agentUpdateBody>>;

/** PUT /v1/agents/upsert: `name` required; `integrations` is for update only. */
export function agentUpsertBody(rules: UrlRules) {
  return z
    .object({ name: agentName, ...writableShape(rules) })
    .partial()
    .required({ name: true })
    .superRefine((body, ctx) => {
      if (body.integrations !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['integrations'], message: 'integrations can only be set by an update' });
      }
    });
}
export type AgentUpsertBody = z.infer<ReturnType<typeof agentUpsertBody>>;

/** The stored configuration of an agent: every writable field except name, slug and the phone-number directives. */
export type AgentConfig = Omit<
  { [K in keyof WritableShape]: z.output<WritableShape[K]> },
  'slug' | 'phone_number' | 'custom_phone_numbers' | 'custom_phone_number'
>;

/** The upsert default of system_prompt: date, weekday, time and time zone through system variables. */
export const DEFAULT_SYSTEM_PROMPT =
  'You are a helpful voice assistant. Today is {{system_weekday}}, {{system_date}} {{system_year}}; ' +
  'the time is {{system_time}} in the {{system_conversation_timezone}} time zone. ' +
  'Answer briefly, in one or two sentences.';
export const DEFAULT_NO_INPUT_POKE_TEXT = 'Are you still there?';

/** Upsert defaults: every writable field a create leaves out. */
export const AGENT_DEFAULTS = {
  timezone: 'UTC',
  voice_id: 'grant',
  audio_format: 'pcm_44100',
  audio_speed: 1.2,
  background_noise_level: 0,
  background_noise: null,
  generate_welcome_message: false,
  is_welcome_message_interruptible: true,
  websocket_timeout_sec: 60,
  listen_only_inbound_enabled: false,
  listen_only_inbound_message: null,
  welcome_message: null,
  system_prompt: DEFAULT_SYSTEM_PROMPT,
  template_variables: {},
  tools: [],
  built_in_tool_configs: {},
  tasks: [],
  generate_no_input_poke_text: false,
  no_input_poke_sec: null,
  no_input_poke_text: DEFAULT_NO_INPUT_POKE_TEXT,
  no_input_end_conversation_sec: 180,
  enable_assistant_backchannel: false,
  assistant_backchannel_aggressiveness: 0.1,
  data_retention_policy: {
    zero_data_retention: false,
    transcripts: { delete_after_hours: null },
    audio_recordings: { delete_after_hours: null },
  },
  outbound_number_pool: null,
  procedure_ids: [],
  integrations: [],
  default_language: 'en',
  additional_languages: [],
  multilingual_mode: 'request',
  push_to_talk: false,
  intelligence_level: 'standard',
  vendor_model: null,
  boosted_keywords: [],
  pronunciation_dictionary: [],
  min_words_to_interrupt: 1,
  configuration_endpoint: null,
  inbound_rollout: 1,
  inbound_rollout_forward_phone_number: null,
  vad_prebuffer_duration_ms: 500,
  vad_min_speech_duration_ms: 50,
  vad_min_silence_duration_ms: 800,
  vad_threshold: 0.38,
  enable_redaction: false,
  enable_watermarking: false,
  mcp_server_ids: [],
  observability_integrations: [],
  external_storage_policy: null,
  languages: ['en'],
} as const satisfies AgentConfig;

/** A copy of the defaults the caller may change. */
export function agentDefaults(): AgentConfig {
  return structuredClone(AGENT_DEFAULTS);
}

/** Folds the deprecated `languages` into `default_language`/`additional_languages` when those are not sent. */
export function applyDeprecatedLanguages(body: AgentUpdateBody): AgentUpdateBody {
  if (!body.languages || body.languages.length === 0) return body;
  const out = { ...body };
  if (out.default_language === undefined) out.default_language = body.languages[0];
  if (out.additional_languages === undefined) {
    out.additional_languages = body.languages.slice(1).filter((l) => l !== out.default_language);
  }
  return out;
}

/** What the phone-number directives of a write leave the agent with (known before the store is asked). */
export interface PhonePlan {
  /** Whether the agent will have at least one phone number after the write. */
  hasPhone: boolean;
}

export interface RuleIssue {
  path: string;
  message: string;
}

/**
 * The rules that join several fields, judged on the agent as it will be after the write. Update checks the merged
 * record, so a rule holds whatever subset was sent.
 */
export function agentRuleIssues(cfg: AgentConfig, phone: PhonePlan): RuleIssue[] {
  const issues: RuleIssue[] = [];
  if (cfg.additional_languages.includes(cfg.default_language)) {
    issues.push({
      path: 'additional_languages',
      message: `must not contain the default_language "${cfg.default_language}"`,
    });
  }
  if (cfg.multilingual_mode === 'auto' && cfg.additional_languages.length > MAX_ADDITIONAL_LANGUAGES_AUTO) {
    issues.push({
      path: 'additional_languages',
      message: `at most ${MAX_ADDITIONAL_LANGUAGES_AUTO} additional languages when multilingual_mode is auto`,
    });
  }
  const languages = new Set<string>();
  cfg.additional_languages.forEach((l, i) => {
    if (languages.has(l)) issues.push({ path: `additional_languages.${i}`, message: `duplicate language "${l}"` });
    languages.add(l);
  });
  if (cfg.inbound_rollout < 1) {
    if (!phone.hasPhone) {
      issues.push({ path: 'inbound_rollout', message: 'below 1.0 requires phone_number to be set' });
    }
    if (cfg.inbound_rollout_forward_phone_number === null) {
      issues.push({
        path: 'inbound_rollout_forward_phone_number',
        message: 'is required when inbound_rollout is below 1.0',
      });
    }
  } else if (cfg.inbound_rollout_forward_phone_number !== null) {
    issues.push({ path: 'inbound_rollout_forward_phone_number', message: 'must be null when inbound_rollout is 1.0' });
  }
  if (cfg.listen_only_inbound_enabled && !cfg.listen_only_inbound_message?.trim()) {
    issues.push({
      path: 'listen_only_inbound_message',
      message: 'must be nonempty when listen_only_inbound_enabled is true',
    });
  }
  if (cfg.external_storage_policy !== null) {
    if (!cfg.data_retention_policy.zero_data_retention) {
      issues.push({
        path: 'external_storage_policy',
        message: 'requires a data_retention_policy with zero_data_retention',
      });
    }
    if (cfg.enable_redaction) {
      issues.push({ path: 'external_storage_policy', message: 'cannot be combined with enable_redaction' });
    }
  }
  return issues;
}

/** The agent record a read returns: its own fields first, in order, then the rest of the writable fields. */
export const agentRecord = z.object({
  id: z.string(),
  name: z.string(),
  phone_numbers: z.array(z.string()),
  project: z.object({ id: z.string(), name: z.string() }),
  timezone: z.string(),
  voice_id: z.string(),
  audio_format: z.enum(AUDIO_FORMATS),
  audio_speed: z.number(),
  background_noise_level: z.number(),
  background_noise: backgroundNoise.nullable(),
  generate_welcome_message: z.boolean(),
  is_welcome_message_interruptible: z.boolean(),
  listen_only_inbound_enabled: z.boolean(),
  listen_only_inbound_message: z.string().nullable(),
  welcome_message: z.string().nullable(),
  system_prompt: z.string(),
  template_variables: z.record(z.string(), templateVariable),
  tools: z.array(z.string()),
  built_in_tool_configs: z.record(z.string(), z.record(z.string(), z.unknown())),
  tasks: z.array(task),
  generate_no_input_poke_text: z.boolean(),
  no_input_poke_sec: z.number().nullable(),
  no_input_poke_text: z.string(),
  slug: z.string().nullable(),
  phone_number: z.enum(['assign-automatically', 'custom']).nullable(),
  custom_phone_numbers: z.array(z.string()),
  websocket_timeout_sec: z.number(),
  no_input_end_conversation_sec: z.number(),
  enable_assistant_backchannel: z.boolean(),
  assistant_backchannel_aggressiveness: z.number(),
  data_retention_policy: dataRetentionPolicy,
  outbound_number_pool: outboundNumberPool.nullable(),
  procedure_ids: z.array(z.string()),
  integrations: z.array(agentIntegration),
  default_language: z.string(),
  additional_languages: z.array(z.string()),
  multilingual_mode: multilingualMode,
  push_to_talk: z.boolean(),
  intelligence_level: intelligenceLevel,
  vendor_model: vendorModel.nullable(),
  boosted_keywords: z.array(z.string()),
  pronunciation_dictionary: z.array(z.object({ word: z.string(), pronunciation: z.string() })),
  min_words_to_interrupt: z.number(),
  configuration_endpoint: z
    .object({ url: z.string(), headers: z.record(z.string(), z.string()).optional(), timeout_ms: z.number() })
    .nullable(),
  inbound_rollout: z.number(),
  inbound_rollout_forward_phone_number: z.string().nullable(),
  vad_prebuffer_duration_ms: z.number(),
  vad_min_speech_duration_ms: z.number(),
  vad_min_silence_duration_ms: z.number(),
  vad_threshold: z.number(),
  enable_redaction: z.boolean(),
  enable_watermarking: z.boolean(),
  mcp_server_ids: z.array(z.string()),
  observability_integrations: z.array(z.string()),
  external_storage_policy: z.string().nullable(),
  custom_phone_number: z.string().nullable(),
  languages: z.array(z.string()),
});
export type AgentRecord = z.infer<typeof agentRecord>;
