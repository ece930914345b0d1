// Stored tools a POST /v1/responses request names in `tools`, read from the project's tools with the
// defaults a read of the tool reports (schemas/tools.ts `toolView`).
import type { Sql } from '../store/db.js';
import { toolsByNames } from '../store/tools.js';
import { toolView, type ToolDefinition } from '../schemas/tools.js';
import type { StoredTool } from './resolve.js';
import type { StoredActionTool } from './tools.js';

/** The tools of `projectId` among `names`, by name. */
export async function loadStoredTools(sql: Sql, projectId: string, names: string[]): Promise<Map<string, StoredTool>> {
  const rows = await toolsByNames(sql, projectId, names);
  const out = new Map<string, StoredTool>();
  for (const row of rows) out.set(row.name, storedTool(row.id, row.definition));
  return out;
}

/** A stored definition as this endpoint needs it; transfer and built-in tools with every field defaulted. */
export function storedTool(id: string, definition: ToolDefinition): StoredTool {
  const view = toolView(id, { id: '', name: '' }, definition);
  switch (view.type) {
    case 'built_in_transfer_to_phone_number':
      return {
        type: view.type,
        name: view.name,
        description: view.description,
        phone_number: view.phone_number ?? null,
        dtmf: view.dtmf ?? null,
        dynamic_dtmf: view.dynamic_dtmf ?? false,
        detect_voicemail: view.detect_voicemail ?? false,
        use_agent_phone_number: view.use_agent_phone_number ?? true,
        keep_listening: view.keep_listening ?? true,
        on_transfer_no_answer: view.on_transfer_no_answer ?? 'return_to_assistant',
        require_speech_before_tool_call: view.require_speech_before_tool_call ?? false,
      } satisfies StoredActionTool;
    case 'built_in_transfer_to_agent':
      return {
        type: view.type,
        name: view.name,
        description: view.description,
        agents_to_transfer_to: view.agents_to_transfer_to ?? [],
        require_speech_before_tool_call: view.require_speech_before_tool_call ?? false,
      } satisfies StoredActionTool;
    case 'built_in_keypad_input':
    case 'built_in_natural_conversation_ending':
      return {
        type: view.type,
        name: view.name,
        description: view.description,
        speech_before_tool_call: view.speech_before_tool_call ?? null,
      } satisfies StoredActionTool;
    case 'built_in_choose_not_to_respond':
      return {
        type: view.type,
        name: view.name,
        description: view.description,
        respond_after_sec: view.respond_after_sec ?? null,
      } satisfies StoredActionTool;
    default:
      return { type: view.type, name: view.name };
  }
}
