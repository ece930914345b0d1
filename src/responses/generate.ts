// Generates the `num_responses` alternative replies of POST /v1/responses: one independent chat completion per
// response (run concurrently), web searches run between rounds, speech generated where a tool call needs it.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log.js';
import { ChatUpstreamInvalidError, type ChatClient, type ChatMessage } from '../engines/chat-client.js';
import type { GeneratedResponse, InputItem } from '../schemas/responses.js';
import { interpret } from './interpret.js';
import { conversationMessages, type PromptShape } from './prompt.js';
import { functionFor, type OfferedTool } from './tools.js';
import type { WebSearch } from '../engines/web-search.js';

/** Rounds of web searches before the model must answer without the tool. */
export const MAX_SEARCH_ROUNDS = 3;

export interface GenerateInput extends PromptShape {
  input: InputItem[];
  num_responses: number;
}

export interface GenerateDeps {
  chat: ChatClient;
  /** null: web_search is not configured (and never offered). */
  search: WebSearch | null;
  log: Logger;
  newCallId?: () => string;
  signal?: AbortSignal;
}

const defaultCallId = () => `call_${randomUUID()}`;

/** Asks for what the assistant says before calling `toolName`, when the model called it without a word. */
async function speechBefore(
  messages: ChatMessage[],
  offered: OfferedTool[],
  toolName: string,
  deps: GenerateDeps,
): Promise<string> {
  const completion = await deps.chat.complete({
    messages: [
      ...messages,
      {
        role: 'system',
        content:
          `You are about to call the tool "${toolName}". First say one short sentence to the user about what you ` +
          'are going to do. Reply with that sentence only.',
      },
    ],
    tools: offered.map(functionFor),
    toolChoice: 'none',
    signal: deps.signal,
  });
  const text = completion.content.trim();
  if (text === '')
    throw new ChatUpstreamInvalidError(`the model gave no speech before '${toolName}', which requires it`);
  return text;
}

async function searchResult(deps: GenerateDeps, query: string): Promise<string> {
  try {
    const hits = await deps.search!(query, deps.signal);
    return JSON.stringify({ query, results: hits });
  } catch (err) {
    // The model is told and answers without results; the request does not fail for it.
    deps.log.warn({ err, query }, 'web search failed');
    return JSON.stringify({ query, error: (err as Error).message });
  }
}

async function generateOne(
  base: ChatMessage[],
  offered: OfferedTool[],
  deps: GenerateDeps,
): Promise<GeneratedResponse> {
  const newCallId = deps.newCallId ?? defaultCallId;
  const messages = [...base];
  const spoken: string[] = [];
  for (let round = 0; ; round++) {
    const tools = round < MAX_SEARCH_ROUNDS ? offered : offered.filter((t) => t.kind !== 'web_search');
    const completion = await deps.chat.complete({ messages, tools: tools.map(functionFor), signal: deps.signal });
    const meaning = interpret(completion, tools, newCallId);
    if (meaning.kind === 'search') {
      if (meaning.speechNeededFor !== null && spoken.length === 0) {
        spoken.push(await speechBefore(messages, tools, meaning.speechNeededFor, deps));
      } else if (meaning.speech) {
        spoken.push(meaning.speech);
      }
      const ids = new Set(meaning.searches.map((s) => s.id));
      messages.push({
        role: 'assistant',
        content: completion.content || null,
        tool_calls: completion.toolCalls.filter((c) => ids.has(c.id)),
      });
      for (const s of meaning.searches) {
        messages.push({ role: 'tool', tool_call_id: s.id, content: await searchResult(deps, s.query) });
      }
      continue;
    }
    if (meaning.dropped.length > 0)
      deps.log.info({ dropped: meaning.dropped }, 'tool calls dropped by the speech rules');
    let text = meaning.text;
    if (meaning.speechNeededFor !== null && spoken.length === 0) {
      text = await speechBefore(messages, tools, meaning.speechNeededFor, deps);
    }
    const silent = meaning.action?.type === 'assistant_chose_not_to_respond';
    const response: GeneratedResponse = {
      text: silent ? '' : [...spoken, text].filter((s) => s !== '').join(' '),
      tool_calls: meaning.toolCalls,
    };
    if (meaning.action) response.action = meaning.action;
    return response;
  }
}

/** Exactly `num_responses` responses, or the first error (ChatUpstreamInvalidError / ChatUpstreamUnavailableError). */
export async function generateResponses(
  request: GenerateInput,
  offered: OfferedTool[],
  deps: GenerateDeps,
): Promise<GeneratedResponse[]> {
  const base = conversationMessages(request, request.input);
  return Promise.all(Array.from({ length: request.num_responses }, () => generateOne(base, offered, deps)));
}
