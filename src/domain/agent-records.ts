// The Agent record an API answer shows: the stored configuration with the agent's name, slug, project and phone
// numbers, in the record's field order.
import type { AgentRecord } from '../schemas/agents.js';
import type { AgentRow, PhoneRow } from '../store/agents.js';

/** The record of `row` with its numbers `phones` (sorted): the listed fields in order, then the writable rest. */
export function toAgentRecord(row: AgentRow, phones: PhoneRow[], project: { id: string; name: string }): AgentRecord {
  const c = row.config;
  const custom = phones.filter((p) => p.kind === 'custom').map((p) => p.number);
  const hasPhone = phones.length > 0;
  return {
    id: row.id,
    name: row.name,
    phone_numbers: phones.map((p) => p.number),
    project,
    timezone: c.timezone,
    voice_id: c.voice_id,
    // An agent that has a phone number reports mulaw_8000 (calls carry G.711).
    audio_format: hasPhone ? 'mulaw_8000' : c.audio_format,
    audio_speed: c.audio_speed,
    background_noise_level: c.background_noise_level,
    background_noise: c.background_noise,
    generate_welcome_message: c.generate_welcome_message,
    is_welcome_message_interruptible: c.is_welcome_message_interruptible,
    listen_only_inbound_enabled: c.listen_only_inbound_enabled,
    listen_only_inbound_message: c.listen_only_inbound_message,
    welcome_message: c.welcome_message,
    system_prompt: c.system_prompt,
    template_variables: c.template_variables,
    tools: c.tools,
    built_in_tool_configs: c.built_in_tool_configs,
    tasks: c.tasks,
    generate_no_input_poke_text: c.generate_no_input_poke_text,
    no_input_poke_sec: c.no_input_poke_sec,
    no_input_poke_text: c.no_input_poke_text,
    slug: row.slug,
    phone_number: custom.length > 0 ? 'custom' : hasPhone ? 'assign-automatically' : null,
    custom_phone_numbers: custom,
    websocket_timeout_sec: c.websocket_timeout_sec,
    no_input_end_conversation_sec: c.no_input_end_conversation_sec,
    enable_assistant_backchannel: c.enable_assistant_backchannel,
    assistant_backchannel_aggressiveness: c.assistant_backchannel_aggressiveness,
    data_retention_policy: c.data_retention_policy,
    outbound_number_pool: c.outbound_number_pool,
    procedure_ids: c.procedure_ids,
    integrations: c.integrations,
    default_language: c.default_language,
    additional_languages: c.additional_languages,
    multilingual_mode: c.multilingual_mode,
    push_to_talk: c.push_to_talk,
    intelligence_level: c.intelligence_level,
    vendor_model: c.vendor_model,
    boosted_keywords: c.boosted_keywords,
    pronunciation_dictionary: c.pronunciation_dictionary,
    min_words_to_interrupt: c.min_words_to_interrupt,
    configuration_endpoint: c.configuration_endpoint,
    inbound_rollout: c.inbound_rollout,
    inbound_rollout_forward_phone_number: c.inbound_rollout_forward_phone_number,
    vad_prebuffer_duration_ms: c.vad_prebuffer_duration_ms,
    vad_min_speech_duration_ms: c.vad_min_speech_duration_ms,
    vad_min_silence_duration_ms: c.vad_min_silence_duration_ms,
    vad_threshold: c.vad_threshold,
    enable_redaction: c.enable_redaction,
    enable_watermarking: c.enable_watermarking,
    mcp_server_ids: c.mcp_server_ids,
    observability_integrations: c.observability_integrations,
    external_storage_policy: c.external_storage_policy,
    custom_phone_number: custom[0] ?? null,
    languages: c.languages,
  };
}
