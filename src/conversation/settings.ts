// The settings a live conversation runs with: the agent's upsert defaults, then the stored agent's config, then
// the inline fields of `config`, then the configuration endpoint's overrides (each later one wins).
import { type z } from 'zod';
import { agentDefaults, type AgentConfig } from '../schemas/agents.js';
import type { VadOptions } from '../media/native/vad.js';
import {
  configMessage,
  STS_DEFAULT_AUDIO_FORMAT,
  type ConfigMessage,
  type InlineWebSocketTool,
  type StsAudioFormat,
} from '../schemas/sts.js';
import type { UrlRules } from '../schemas/common.js';

/**
 * A conversation's settings: one object for its whole life, read live by its parts. A transfer to another agent
 * (Conversation.transferToAgent) replaces the agent fields in place, keeping the audio formats, template values,
 * engine settings, model and vendor_model (the engine stays). What follows the transfer:
 * - read live: system_prompt and tools (to the engine), min_words_to_interrupt, push_to_talk,
 *   listen_only_inbound_enabled, enable_assistant_backchannel and its aggressiveness (turn-taking.ts),
 *   no_input_poke_text and generate_no_input_poke_text (the poke), timezone and template_variables (variables);
 * - handed on by the transfer: voice_id, default_language, additional_languages, boosted_keywords and
 *   pronunciation_dictionary (engine updateSession), audio_speed and background noise (the next utterance's
 *   playout), zero data retention (from then on; it is never turned off), websocket_timeout_sec, no_input_poke_sec
 *   and no_input_end_conversation_sec (SilenceTimers.retime: a timer counting starts over from the transfer with
 *   the new duration), the vad_* settings (TurnTaking.setVadOptions: the running VAD keeps its learnt noise and
 *   takes the new values from its next 10 ms step; a user turn under way ends by the new
 *   vad_min_silence_duration_ms counted from its last voiced step; native/src/vad.h). A new agent whose vad_* the
 *   native VAD refuses (out of its ranges) is not transferred to.
 * What does not follow: vendor_model (no engine switch), and the fields used only at the start (welcome message,
 * configuration_endpoint) or not at all yet (multilingual_mode, intelligence_level, enable_redaction,
 * enable_watermarking). The stored record keeps its start settings and agent; each assistant item records the
 * voice and speed its utterance was heard with (Utterance voiceId, audioSpeed), not those in force when it is
 * written: a transfer line keeps the old voice, and an engine that refuses the new voice (openai-realtime,
 * cannot_update_voice) is recorded with the voice it kept.
 */
export interface LiveSettings extends AgentConfig {
  inputFormat: StsAudioFormat;
  outputFormat: StsAudioFormat;
  binaryAudio: boolean;
  /** Values given for template variables (the agent's definitions hold the defaults). */
  templateValues: Record<string, string>;
  /** Tools given inline in `config` (run by the client). */
  inlineTools: InlineWebSocketTool[];
  model: string;
  /** Engine-specific settings (EngineSessionOptions.engineSettings), e.g. `scripted_engine`. */
  engineSettings: Record<string, unknown>;
}

/** The VAD options the settings' vad_* fields give. */
export function vadOptions(s: LiveSettings): VadOptions {
  return {
    threshold: s.vad_threshold,
    prebufferMs: s.vad_prebuffer_duration_ms,
    minSpeechMs: s.vad_min_speech_duration_ms,
    minSilenceMs: s.vad_min_silence_duration_ms,
  };
}

/** The playout's background noise the settings give (null: none); at the start and on a transfer. */
export function playoutNoise(
  s: LiveSettings,
): { bed: NonNullable<LiveSettings['background_noise']>; level: number } | null {
  return s.background_noise ? { bed: s.background_noise, level: s.background_noise_level } : null;
}

/** Fields of `config` that are not agent settings. */
const NOT_SETTINGS = new Set([
  'type',
  'agent',
  'project',
  'model',
  'input_format',
  'output_format',
  'binary_audio',
  'tools',
  'template_variables',
  'external_id',
  'scripted_engine',
]);

export const DEFAULT_MODEL = 'merritt';

/** The base: defaults, then the stored agent's config (when one is named). */
export function baseSettings(agentConfig: Record<string, unknown> | null): LiveSettings {
  const cfg = { ...agentDefaults(), ...(agentConfig ?? {}) };
  return {
    ...cfg,
    inputFormat: STS_DEFAULT_AUDIO_FORMAT,
    outputFormat: STS_DEFAULT_AUDIO_FORMAT,
    binaryAudio: false,
    templateValues: {},
    inlineTools: [],
    model: DEFAULT_MODEL,
    engineSettings: {},
  };
}

/** Applies a `config` message (or a configuration endpoint's overrides, which take the same shape). */
export function applyConfig(base: LiveSettings, config: Partial<ConfigMessage>): LiveSettings {
  const out: LiveSettings = { ...base };
  const agentFields = out as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined || NOT_SETTINGS.has(key)) continue;
    agentFields[key] = value;
  }
  if (config.input_format) out.inputFormat = config.input_format;
  if (config.output_format) out.outputFormat = config.output_format;
  if (config.binary_audio !== undefined) out.binaryAudio = config.binary_audio;
  if (config.model) out.model = config.model;
  if (config.scripted_engine !== undefined)
    out.engineSettings = { ...out.engineSettings, scripted_engine: config.scripted_engine };
  if (config.template_variables) out.templateValues = { ...out.templateValues, ...config.template_variables };
  if (config.tools) {
    out.tools = config.tools.filter((t): t is string => typeof t === 'string');
    out.inlineTools = config.tools.filter((t): t is InlineWebSocketTool => typeof t !== 'string');
  }
  return out;
}

/** What a configuration endpoint may answer: the fields of `config` except the agent and project. */
export function overridesSchema(rules: UrlRules) {
  return configMessage(rules).omit({ type: true, agent: true, project: true }).partial();
}
export type Overrides = z.infer<ReturnType<typeof overridesSchema>>;
