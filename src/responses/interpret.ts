// One chat completion -> what it means for a generated response: a web search to run first, or the reply
// (text, inline tool calls not executed, or one action), with the speech/tool-call rules applied. Pure.
import { ChatUpstreamInvalidError, type ChatCompletion } from '../engines/chat-client.js';
import { E164_PATTERN } from '../schemas/common.js';
import type { Action, GeneratedToolCall } from '../schemas/responses.js';
import { DTMF_DIGITS_PATTERN, type OfferedTool } from './tools.js';

export type Interpretation =
  | { kind: 'search'; speech: string; searches: { id: string; query: string }[]; speechNeededFor: string | null }
  | {
      kind: 'reply';
      text: string;
      toolCalls: GeneratedToolCall[];
      action?: Action;
      /** Name of the called tool that needs speech before it while the reply has none. */
      speechNeededFor: string | null;
      /** Calls dropped by the rules, for the log. */
      dropped: string[];
    };

interface ParsedCall {
  id: string;
  tool: OfferedTool;
  args: Record<string, unknown>;
}

const invalid = (message: string) => new ChatUpstreamInvalidError(message);

function parseArgs(name: string, raw: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(raw.trim() === '' ? '{}' : raw);
  } catch {
    throw invalid(`the model called '${name}' with arguments that are not JSON: ${raw.slice(0, 200)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(`the model called '${name}' with arguments that are not a JSON object`);
  }
  return value as Record<string, unknown>;
}

function stringArg(call: ParsedCall, key: string, pattern: RegExp, what: string): string {
  const value = call.args[key];
  if (typeof value !== 'string' || !pattern.test(value)) {
    throw invalid(`the model called '${call.tool.name}' without a valid '${key}' (${what})`);
  }
  return value;
}

/** The action a call of a built-in or stored transfer tool stands for; null for an inline tool. */
export function actionOf(call: ParsedCall): Action | null {
  const tool = call.tool;
  switch (tool.kind) {
    case 'inline':
    case 'web_search':
      return null;
    case 'keypad_input':
      return { type: 'dtmf', digits: stringArg(call, 'digits', DTMF_DIGITS_PATTERN, 'keypad keys 0-9, *, #') };
    case 'natural_conversation_ending':
      return { type: 'assistant_ended_conversation' };
    case 'choose_not_to_respond':
      return { type: 'assistant_chose_not_to_respond', respond_after_sec: tool.respondAfterSec };
    case 'transfer_to_phone_number': {
      const t = tool.tool;
      const phone = t.phone_number ?? stringArg(call, 'phone_number', E164_PATTERN, 'an E.164 number');
      let dtmf = t.dtmf;
      if (t.dynamic_dtmf) {
        dtmf =
          call.args.dtmf === undefined || call.args.dtmf === ''
            ? null
            : stringArg(call, 'dtmf', DTMF_DIGITS_PATTERN, 'keypad keys');
      }
      return {
        type: 'transfer_to_phone_number',
        phone_number: phone,
        detect_voicemail: t.detect_voicemail,
        use_agent_phone_number: t.use_agent_phone_number,
        keep_listening: t.keep_listening,
        on_transfer_no_answer: t.on_transfer_no_answer,
        dtmf,
      };
    }
    case 'transfer_to_agent': {
      const agent = call.args.agent;
      if (typeof agent !== 'string' || !tool.tool.agents_to_transfer_to.includes(agent)) {
        throw invalid(
          `the model called '${tool.name}' with an agent that is not one of ${tool.tool.agents_to_transfer_to.join(', ')}`,
        );
      }
      return { type: 'transfer_to_agent', agent };
    }
  }
}

function queryValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** An inline call as a `tool_calls` entry, its arguments placed by `parameter_locations`. */
export function generatedCall(call: ParsedCall & { tool: { kind: 'inline' } }, id: string): GeneratedToolCall {
  const locations = call.tool.definition.parameter_locations ?? {};
  const body: Record<string, unknown> = {};
  const query: Record<string, string> = {};
  for (const [key, value] of Object.entries(call.args)) {
    if (locations[key] === 'query_string') query[key] = queryValue(value);
    else body[key] = value;
  }
  const out: GeneratedToolCall = { tool_call_id: id, tool: { name: call.tool.name } };
  if (Object.keys(body).length > 0 || Object.keys(query).length === 0) out.request_body = body;
  if (Object.keys(query).length > 0) out.query_params = query;
  return out;
}

export function interpret(completion: ChatCompletion, offered: OfferedTool[], newCallId: () => string): Interpretation {
  const byName = new Map(offered.map((tool) => [tool.name, tool]));
  const calls: ParsedCall[] = completion.toolCalls.map((call) => {
    const tool = byName.get(call.function.name);
    if (!tool) throw invalid(`the model called '${call.function.name}', which it was not offered`);
    return { id: call.id, tool, args: parseArgs(call.function.name, call.function.arguments) };
  });
  const text = completion.content.trim();

  const searches = calls.filter((c) => c.tool.kind === 'web_search');
  if (searches.length > 0) {
    const rule = searches[0].tool.speech;
    const speech = rule.suppress ? '' : text;
    return {
      kind: 'search',
      speech,
      searches: searches.map((c) => ({ id: c.id, query: stringArg(c, 'query', /\S/, 'a search query') })),
      speechNeededFor: rule.requireBefore && speech === '' ? searches[0].tool.name : null,
    };
  }

  const dropped: string[] = [];
  // forbid_tool_call_after_speech: a call after speech is dropped, the speech kept.
  const allowed = calls.filter((c) => {
    const keep = text === '' || !c.tool.speech.forbidCallAfterSpeech;
    if (!keep) dropped.push(`${c.tool.name}: called after speech`);
    return keep;
  });
  if (allowed.length === 0) {
    if (text === '') throw invalid('the model answered with neither text nor a tool call');
    return { kind: 'reply', text, toolCalls: [], speechNeededFor: null, dropped };
  }

  // One response carries either an action or tool calls: the model's first call decides which.
  const first = allowed[0];
  const firstAction = actionOf(first);
  if (firstAction) {
    for (const c of allowed.slice(1)) dropped.push(`${c.tool.name}: a response carries one action`);
    const silent = first.tool.speech.suppress || first.tool.kind === 'choose_not_to_respond';
    const spoken = silent ? '' : text;
    const needs = !silent && first.tool.speech.requireBefore && spoken === '' ? first.tool.name : null;
    return { kind: 'reply', text: spoken, toolCalls: [], action: firstAction, speechNeededFor: needs, dropped };
  }
  const toolCalls: GeneratedToolCall[] = [];
  let needs: string | null = null;
  for (const c of allowed) {
    if (c.tool.kind !== 'inline') {
      dropped.push(`${c.tool.name}: an action beside tool calls`);
      continue;
    }
    toolCalls.push(generatedCall(c as ParsedCall & { tool: { kind: 'inline' } }, newCallId()));
    if (needs === null && text === '' && c.tool.speech.requireBefore) needs = c.tool.name;
  }
  return { kind: 'reply', text, toolCalls, speechNeededFor: needs, dropped };
}
