// How a tool's call fits with the speech of a live conversation: the tool settings of the API that act on it, each
// read only on the tool types the API accepts it for (src/schemas/tools.ts FIELD_TYPES), with the API's defaults.
// tool-host.ts applies them to every call, whatever the engine. Pure.
import type { ToolDefinition } from '../../schemas/tools.js';

/** The fields of a tool definition (stored, inline or built-in) the rules read. */
export type RuleFields = { type: string; execution_mode: string } & Partial<
  Pick<
    ToolDefinition,
    | 'speech_before_tool_call'
    | 'require_speech_before_tool_call'
    | 'wait_for_speech_before_tool_call'
    | 'forbid_speech_after_tool_call'
    | 'forbid_tool_call_after_speech'
    | 'allow_tool_chaining'
    | 'uninterruptible'
  >
>;

/** What speech must come before a call in its response (speech_before_tool_call, require_speech_before_tool_call). */
export type SpeechBefore = 'required' | 'optional' | 'suppressed';

export interface ToolRules {
  /**
   * required: a call made without speech before it in its response waits for a line the engine is asked for;
   * suppressed: the speech of its response is not spoken; optional: as the model did.
   */
  speechBefore: SpeechBefore;
  /** wait_for_speech_before_tool_call: the call runs once the speech before it in its response has played. */
  waitForSpeech: boolean;
  /** forbid_speech_after_tool_call: no reply to the output; the conversation waits for the user. */
  forbidSpeechAfter: boolean;
  /** forbid_tool_call_after_speech: a call made after speech in its response is not executed (the speech stays). */
  forbidCallAfterSpeech: boolean;
  /** allow_tool_chaining: false makes the reply to the output speech only. */
  chaining: boolean;
  /** uninterruptible: while the call runs the user cannot interrupt the assistant (nor the call). */
  uninterruptible: boolean;
}

const REMOTE: readonly string[] = ['custom_webhook', 'custom_websocket'];
const CUSTOM: readonly string[] = ['custom_context', ...REMOTE];
/** speech_before_tool_call is taken by these built-ins (web_search through built_in_tool_configs). */
const SPEECH_MODE_TYPES: readonly string[] = [
  'built_in_natural_conversation_ending',
  'built_in_keypad_input',
  'built_in_web_search',
];

export function toolRules(def: RuleFields): ToolRules {
  const remote = REMOTE.includes(def.type);
  const custom = CUSTOM.includes(def.type);
  const sync = def.execution_mode !== 'async';
  const mode = SPEECH_MODE_TYPES.includes(def.type) ? def.speech_before_tool_call : undefined;
  let uninterruptible = false;
  if (remote && sync) uninterruptible = def.uninterruptible ?? false;
  else if (def.type === 'built_in_transfer_to_phone_number') uninterruptible = def.uninterruptible ?? true;
  return {
    speechBefore: mode ?? (def.require_speech_before_tool_call ? 'required' : 'optional'),
    waitForSpeech: remote && (def.wait_for_speech_before_tool_call ?? false),
    forbidSpeechAfter: custom && (def.forbid_speech_after_tool_call ?? false),
    forbidCallAfterSpeech: remote && (def.forbid_tool_call_after_speech ?? false),
    chaining: !custom || (def.allow_tool_chaining ?? true),
    uninterruptible,
  };
}
