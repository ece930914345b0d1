// The chat messages for one POST /v1/responses request: the agent's system prompt shaped by its voice and
// languages, then the inline conversation in order. Pure.
import type { ChatMessage, ChatToolCall } from '../engines/chat-client.js';
import type { Action, InputItem, ToolCallOutputItem } from '../schemas/responses.js';

const languageNames = new Intl.DisplayNames(['en'], { type: 'language' });

export function languageName(code: string): string {
  return languageNames.of(code) ?? code;
}

/** Fixed text of the voice instructions, built once. */
const SPOKEN_STYLE =
  'Your replies are spoken aloud in a voice conversation. Keep them short and natural to say: ' +
  'no markdown, lists, emoji or links.';

export interface PromptShape {
  system_prompt: string;
  voice_id: string;
  default_language?: string | undefined;
  additional_languages: string[];
}

export function systemMessage(shape: PromptShape): string {
  const parts = [shape.system_prompt.trim(), `${SPOKEN_STYLE} You speak with the voice "${shape.voice_id}".`];
  if (shape.default_language) {
    const extra = shape.additional_languages.map(languageName);
    parts.push(
      extra.length === 0
        ? `Speak ${languageName(shape.default_language)}.`
        : `Speak ${languageName(shape.default_language)} by default. The user may also speak ${extra.join(' or ')}: ` +
            'answer in the language the user speaks.',
    );
  } else if (shape.additional_languages.length > 0) {
    parts.push(
      `The user may speak ${shape.additional_languages.map(languageName).join(' or ')}: answer in the language the user speaks.`,
    );
  }
  return parts.filter((p) => p.length > 0).join('\n\n');
}

/** The function an action of a live conversation came from, and its arguments (for the history). */
export function actionAsCall(action: Action): { name: string; args: Record<string, unknown> } {
  switch (action.type) {
    case 'assistant_chose_not_to_respond':
      return { name: 'choose_not_to_respond', args: {} };
    case 'assistant_ended_conversation':
      return { name: 'natural_conversation_ending', args: {} };
    case 'dtmf':
      return { name: 'keypad_input', args: { digits: action.digits } };
    case 'transfer_to_phone_number':
      return { name: 'transfer_to_phone_number', args: { phone_number: action.phone_number } };
    case 'transfer_to_agent':
      return { name: 'transfer_to_agent', args: { agent: action.agent } };
  }
}

function outputContent(item: ToolCallOutputItem): string {
  const out: Record<string, unknown> = {};
  if (item.response_status_code != null) out.status_code = item.response_status_code;
  if (item.response_body !== undefined) out.body = item.response_body;
  if (item.error_message != null) out.error = item.error_message;
  if (item.timed_out) out.timed_out = true;
  if (item.interrupted) out.interrupted = true;
  return JSON.stringify(out);
}

/** System message, then each input item as the chat message(s) a live conversation would have produced. */
export function conversationMessages(shape: PromptShape, input: InputItem[]): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: systemMessage(shape) }];
  for (const [index, item] of input.entries()) {
    if ('type' in item) {
      messages.push({ role: 'tool', tool_call_id: item.tool_call_id, content: outputContent(item) });
    } else if (item.role === 'user') {
      messages.push({ role: 'user', content: item.text });
    } else if (item.tool_calls && item.tool_calls.length > 0) {
      const calls: ChatToolCall[] = item.tool_calls.map((call) => ({
        id: call.tool_call_id,
        type: 'function',
        function: { name: call.tool.name, arguments: JSON.stringify({ ...call.query_params, ...call.request_body }) },
      }));
      messages.push({ role: 'assistant', content: item.text || null, tool_calls: calls });
    } else if (item.action) {
      // The action happened in the conversation: a call of its function, and its (effect-free) result.
      const { name, args } = actionAsCall(item.action);
      const id = `action_${index}`;
      messages.push({
        role: 'assistant',
        content: item.text || null,
        tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
      });
      messages.push({ role: 'tool', tool_call_id: id, content: JSON.stringify({ status: 'done' }) });
    } else {
      messages.push({ role: 'assistant', content: item.text });
    }
  }
  return messages;
}
