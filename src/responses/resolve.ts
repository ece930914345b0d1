// The tools a POST /v1/responses request offers: its inline definitions, then what `tools` names (built-ins with
// their configuration, stored transfer and built-in tools). Pure: stored tools are looked up by the caller.
import {
  BUILT_IN_TOOLS,
  type BuiltInToolName,
  type ResponsesRequestBody,
  type ResponsesTool,
} from '../schemas/responses.js';
import {
  inlineTools,
  speechRule,
  storedActionTool,
  STORED_ACTION_TYPES,
  type OfferedTool,
  type StoredActionTool,
} from './tools.js';

/** A `tools` entry that cannot be offered; `param` is its path in the body (400, validation shape). */
export class ToolReferenceError extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
    this.name = 'ToolReferenceError';
  }
}

/** A stored tool of any type, as far as this endpoint needs to know it. */
export type StoredTool = StoredActionTool | { type: string; name: string };

export function isBuiltIn(name: string): name is BuiltInToolName {
  return (BUILT_IN_TOOLS as readonly string[]).includes(name);
}

/** Names in `tools` that must be looked up among stored tools. */
export function storedToolNames(tools: ResponsesTool[]): string[] {
  return tools.filter((t): t is string => typeof t === 'string' && !isBuiltIn(t));
}

export const WEB_SEARCH_SETTING = 'PARLEY_WEB_SEARCH_URL';

function builtIn(reference: ResponsesTool, name: BuiltInToolName, param: string, webSearch: boolean): OfferedTool {
  const config = typeof reference === 'string' ? undefined : reference.tool_config;
  switch (name) {
    case 'keypad_input':
    case 'natural_conversation_ending':
    case 'web_search': {
      if (name === 'web_search' && !webSearch) {
        throw new ToolReferenceError(param, `web_search needs a search endpoint: set ${WEB_SEARCH_SETTING}`);
      }
      const mode = config && 'speech_before_tool_call' in config ? config.speech_before_tool_call : undefined;
      return { kind: name, name, speech: speechRule(mode) };
    }
    case 'choose_not_to_respond': {
      const after = config && 'respond_after_sec' in config ? config.respond_after_sec : undefined;
      return { kind: name, name, respondAfterSec: after ?? null, speech: speechRule('optional') };
    }
  }
}

/**
 * The offered tools, in order: inline definitions, then `tools`. `stored` maps each name of
 * `storedToolNames(body.tools)` found in the request's project to its tool.
 */
export function resolveTools(
  body: Pick<ResponsesRequestBody, 'tools' | 'tool_definitions' | 'project'>,
  stored: ReadonlyMap<string, StoredTool>,
  opts: { webSearch: boolean },
): OfferedTool[] {
  const offered = inlineTools(body.tool_definitions);
  for (const [i, reference] of body.tools.entries()) {
    const param = `tools.${i}`;
    const name = typeof reference === 'string' ? reference : reference.name;
    if (isBuiltIn(name)) {
      offered.push(builtIn(reference, name, param, opts.webSearch));
      continue;
    }
    if (body.project === undefined) {
      throw new ToolReferenceError('project', `project is required when tools names a stored tool ('${name}')`);
    }
    const tool = stored.get(name);
    if (!tool) throw new ToolReferenceError(param, `no tool '${name}' in project '${body.project}'`);
    if (!STORED_ACTION_TYPES.includes(tool.type)) {
      throw new ToolReferenceError(
        param,
        `'${name}' is a ${tool.type} tool: only built-in tools and stored transfer tools can be referenced; give it inline in tool_definitions`,
      );
    }
    offered.push(storedActionTool(tool as StoredActionTool));
  }
  return offered;
}
