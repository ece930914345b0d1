// What a conversation starts from: the stored agent (and project) a `config` names, or the agent of a phone call
// (resolved by main), and the settings they make (settings.ts layers). Refusals carry the error code the client is sent.
import type { CallStart, ConversationStart, ConversationStore } from './host.js';
import { applyConfig, baseSettings, type LiveSettings } from './settings.js';

export type StoredTool = { id: string; name: string; definition: Record<string, unknown> };

export type ResolvedStart =
  | {
      ok: true;
      settings: LiveSettings;
      agent: { id: string; name: string } | null;
      project: { id: string; name: string };
      storedTools: StoredTool[];
      externalId: string | null;
    }
  | { ok: false; message: string; code: 'not_found' | 'agent_disabled' };

export async function resolveStart(
  store: ConversationStore,
  orgId: string,
  start: ConversationStart,
): Promise<ResolvedStart> {
  if (start.kind === 'call') {
    const a = start.call.agent;
    return {
      ok: true,
      settings: callSettings(start.call),
      agent: { id: a.agent.id, name: a.agent.name },
      project: a.project,
      storedTools: a.tools,
      externalId: null,
    };
  }
  const cfg = start.config;
  const projectName = cfg.project ?? 'main';
  const externalId = cfg.external_id ?? null;
  if (!cfg.agent) {
    const project = await store.resolveProject(orgId, projectName);
    if (!project) return { ok: false, message: `project ${projectName} not found`, code: 'not_found' };
    return {
      ok: true,
      settings: applyConfig(baseSettings(null), cfg),
      agent: null,
      project,
      storedTools: [],
      externalId,
    };
  }
  const resolved = await store.resolveAgent(orgId, projectName, cfg.agent);
  if (!resolved)
    return { ok: false, message: `agent ${cfg.agent} not found in project ${projectName}`, code: 'not_found' };
  if (!resolved.agent.enabled) return { ok: false, message: `agent ${cfg.agent} is disabled`, code: 'agent_disabled' };
  return {
    ok: true,
    settings: applyConfig(baseSettings(resolved.config), cfg),
    agent: { id: resolved.agent.id, name: resolved.agent.name },
    project: resolved.project,
    storedTools: resolved.tools,
    externalId,
  };
}

/**
 * A call's settings: the agent's, the phone number's configuration endpoint in place of the agent's, the outbound
 * call config's fields over them, the call's codec both ways, and listen-only as main decided it. A listen-only call
 * speaks nothing but its message: no backchannel either.
 */
function callSettings(call: CallStart): LiveSettings {
  let s = baseSettings(call.agent.config);
  if (call.configurationEndpoint) s.configuration_endpoint = call.configurationEndpoint;
  if (call.overrides) s = applyConfig(s, call.overrides);
  s.inputFormat = call.format;
  s.outputFormat = call.format;
  s.listen_only_inbound_enabled = call.listenOnly;
  if (call.listenOnly) s.enable_assistant_backchannel = false;
  return s;
}

/** The record's configuration fields (store ConversationSettings) from the live settings. */
export function recordSettings(s: LiveSettings) {
  return {
    model: s.model,
    voice_id: s.voice_id,
    audio_speed: s.audio_speed,
    welcome_message: s.welcome_message,
    generate_welcome_message: s.generate_welcome_message,
    is_welcome_message_interruptible: s.is_welcome_message_interruptible,
    listen_only: s.listen_only_inbound_enabled,
    system_prompt: s.system_prompt,
    template_variables: s.templateValues,
    input_format: s.inputFormat,
    output_format: s.outputFormat,
    min_words_to_interrupt: s.min_words_to_interrupt,
    no_input_poke_sec: s.no_input_poke_sec,
    no_input_poke_text: s.no_input_poke_text,
    no_input_end_conversation_sec: s.no_input_end_conversation_sec,
    websocket_timeout_sec: s.websocket_timeout_sec,
    push_to_talk: s.push_to_talk,
    vendor_model: s.vendor_model,
    tools: s.tools,
    // Read after the end: the retention sweep, the evaluations and the redaction (src/jobs/).
    data_retention_policy: s.data_retention_policy,
    tasks: s.tasks,
    enable_redaction: s.enable_redaction,
  };
}
