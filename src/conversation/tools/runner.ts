// Runs the tool calls of a live conversation: context, webhook, WebSocket (answered by the client), web search, and
// the built-ins. Sync tools answer the engine when they finish; async tools answer at once and add their result to
// the context when it arrives (speaking it when `wait_for_response`). How the engine replies to an output (at all,
// speech only) is the tool host's to say (tool-host.ts), when the output is submitted. Every call is recorded,
// those not executed too (refuse).
import type { EngineToolCall, SpeechEngineSession } from '../../engines/engine.js';
import type { WebSearch } from '../../engines/web-search.js';
import type { NewToolCall } from '../../store/conversations.js';
import type { ConversationTimers } from '../host.js';
import type { ServerEvent } from '../../schemas/sts.js';
import type { ToolDefinition } from '../../schemas/tools.js';
import { outputTimeoutMs, WEB_SEARCH_TYPE, type LiveTool } from './catalog.js';
import {
  transferOutput,
  transferRequest,
  type PhoneTransferRequest,
  type PhoneTransferResult,
} from './phone-transfer.js';
import { toolRules } from './speech-rules.js';
import { callWebhook, type ReservedParameters } from './webhook.js';

/** How the engine goes on after an output: a reply at all, and whether it may only speak. */
export interface ReplyAfter {
  respond: boolean;
  speechOnly: boolean;
}

/** What the runner needs of its conversation. */
export interface ToolHost {
  session(): SpeechEngineSession | null;
  send(event: ServerEvent): void;
  timers: ConversationTimers;
  fetch: typeof fetch;
  /** The web search client (PARLEY_WEB_SEARCH_URL), or null when none is configured. */
  search: WebSearch | null;
  reserved(): ReservedParameters;
  /** Built-ins that act on the conversation. */
  endAfterResponse(responseId: string): void;
  chooseNotToRespond(responseId: string, respondAfterSec: number | null): void;
  transferToAgent(agentName: string): Promise<string | null>;
  /**
   * Transfers the phone call (built_in_transfer_to_phone_number); resolves once the agent's part in it has settled
   * (phone-transfer.ts). null: this conversation is not a phone call.
   */
  transferToPhoneNumber(request: PhoneTransferRequest): Promise<PhoneTransferResult | null>;
  /** A reply to an async tool's result (wait_for_response); speech only when the tool allows no chaining. */
  replyWithResult(speechOnly: boolean): void;
}

/** A call's record entry and the output the engine gets; `noReply`: the built-in itself forbids a reply. */
type Outcome = { entry: NewToolCall; output: string; noReply?: true };

export class ToolRunner {
  private readonly waiting = new Map<string, { resolve(output: unknown): void; responseId: string; name: string }>();
  /** Aborts the web searches in flight when the conversation ends. */
  private readonly searches = new AbortController();

  constructor(
    private readonly host: ToolHost,
    private tools: Map<string, LiveTool>,
  ) {}

  setTools(tools: Map<string, LiveTool>): void {
    this.tools = tools;
  }

  get byName(): ReadonlyMap<string, LiveTool> {
    return this.tools;
  }

  /**
   * Runs one call; resolves with its record entry once it has settled. `after` is asked as each output is
   * submitted (the response's other calls may have changed it meanwhile).
   */
  async run(call: EngineToolCall, after: () => ReplyAfter): Promise<NewToolCall> {
    const tool = this.tools.get(call.name);
    const session = this.host.session();
    if (!tool) {
      const message = `unknown tool ${call.name}`;
      session?.submitToolOutput(call.callId, JSON.stringify({ error: message }), true);
      return {
        tool: { id: 'unknown', name: call.name },
        request_body: call.arguments,
        response_body: null,
        timed_out: false,
        error_message: message,
      };
    }
    const def = tool.definition;
    const isAsync =
      def.execution_mode === 'async' && (tool.type === 'custom_webhook' || tool.type === 'custom_websocket');
    if (isAsync) submit(session, call.callId, JSON.stringify({ status: 'started' }), after());
    const { entry, output, noReply } = await this.execute(tool, call);
    const s = this.host.session();
    if (!s) return entry;
    if (!isAsync) submit(s, call.callId, output, noReply ? { respond: false, speechOnly: false } : after());
    else {
      s.updateSession({ systemMessage: `Result of ${tool.name}: ${output}` });
      if (def.wait_for_response) this.host.replyWithResult(!toolRules(def).chaining);
    }
    return entry;
  }

  /**
   * A call the conversation does not execute (a speech rule forbids it, or the conversation ended first): the
   * engine gets an error as its output, with no reply to it, and the record keeps the call with `reason`.
   */
  refuse(call: EngineToolCall, tool: LiveTool, reason: string): NewToolCall {
    this.host.session()?.submitToolOutput(call.callId, JSON.stringify({ error: `not executed: ${reason}` }), false);
    return {
      tool: { id: tool.id, name: tool.name },
      request_body: call.arguments,
      response_body: null,
      timed_out: false,
      error_message: `not executed: ${reason}`,
    };
  }

  /** A client's tool_call_output; false when no call of that id is waiting. */
  answer(toolCallId: string, output: unknown): boolean {
    const w = this.waiting.get(toolCallId);
    if (!w) return false;
    this.waiting.delete(toolCallId);
    w.resolve(output);
    return true;
  }

  /** Barge-in: the client's pending calls of this response are interrupted. */
  interruptResponse(responseId: string): void {
    for (const [id, w] of this.waiting) {
      if (w.responseId !== responseId) continue;
      this.host.send({ type: 'tool_call_interrupted', tool_call_id: id, tool_name: w.name });
    }
  }

  private async execute(tool: LiveTool, call: EngineToolCall): Promise<Outcome> {
    const def = tool.definition;
    const base: NewToolCall = {
      tool: { id: tool.id, name: tool.name },
      request_body: call.arguments,
      response_body: null,
      timed_out: false,
      error_message: null,
    };
    switch (def.type) {
      case 'custom_context':
        return { entry: { ...base, response_body: { context: def.context ?? '' } }, output: def.context ?? '' };
      case 'custom_webhook':
        return callWebhook(
          { id: tool.id, name: tool.name, definition: def },
          call.arguments,
          this.host.reserved(),
          this.host,
        );
      case 'custom_websocket':
        return this.viaClient(tool, def, call, base);
      case WEB_SEARCH_TYPE:
        return this.search(call, base);
      case 'built_in_natural_conversation_ending':
        this.host.endAfterResponse(call.responseId);
        return { entry: { ...base, response_body: { ended: true } }, output: 'ending the conversation', noReply: true };
      case 'built_in_keypad_input': {
        const digits = argumentText(call.arguments.digits);
        if (!/^[0-9A-Da-d*#]+$/.test(digits))
          return { entry: { ...base, error_message: `not DTMF digits: ${digits}` }, output: 'invalid digits' };
        this.host.send({ type: 'dtmf', digits });
        return { entry: { ...base, response_body: { digits } }, output: `pressed ${digits}` };
      }
      case 'built_in_choose_not_to_respond':
        this.host.chooseNotToRespond(call.responseId, def.respond_after_sec ?? null);
        // Not responding: the output asks for no reply (a follow-up, if any, is respond_after_sec's).
        return { entry: { ...base, response_body: { responded: false } }, output: 'not responding', noReply: true };
      case 'built_in_transfer_to_agent': {
        const name = argumentText(call.arguments.agent_name);
        const allowed = def.agents_to_transfer_to;
        if (allowed && !allowed.includes(name))
          return {
            entry: { ...base, error_message: `agent ${name} is not a transfer target` },
            output: 'transfer refused',
          };
        const problem = await this.host.transferToAgent(name);
        if (problem) return { entry: { ...base, error_message: problem }, output: `transfer failed: ${problem}` };
        return { entry: { ...base, response_body: { transferred_to: name } }, output: `transferred to ${name}` };
      }
      case 'built_in_transfer_to_phone_number': {
        const request = transferRequest(def, call.arguments);
        if ('error' in request)
          return { entry: { ...base, error_message: request.error }, output: `transfer refused: ${request.error}` };
        const result = await this.host.transferToPhoneNumber(request);
        if (result === null)
          return {
            entry: { ...base, error_message: 'phone transfers need a phone call' },
            output: 'transfer not available in this conversation',
          };
        const entry = { ...base, response_body: { ...result } };
        if (result.outcome === 'failed') entry.error_message = result.reason;
        // Transferred: the conversation is ending, nobody is left to answer.
        return {
          entry,
          output: transferOutput(result),
          ...(result.outcome === 'transferred' ? { noReply: true as const } : {}),
        };
      }
    }
  }

  /** web_search: the results (or the failure) go to the model, which answers with them. */
  private async search(call: EngineToolCall, base: NewToolCall): Promise<Outcome> {
    const query = argumentText(call.arguments.query).trim();
    const search = this.host.search;
    if (!search)
      return {
        entry: { ...base, error_message: 'web search is not configured' },
        output: JSON.stringify({ query, error: 'web search is not configured' }),
      };
    if (query === '')
      return {
        entry: { ...base, error_message: 'no search query' },
        output: JSON.stringify({ error: 'no search query' }),
      };
    try {
      const results = await search(query, this.searches.signal);
      return { entry: { ...base, response_body: { query, results } }, output: JSON.stringify({ query, results }) };
    } catch (err) {
      // The model is told and answers without results.
      const message = (err as Error).message;
      return { entry: { ...base, error_message: message }, output: JSON.stringify({ query, error: message }) };
    }
  }

  private viaClient(tool: LiveTool, def: ToolDefinition, call: EngineToolCall, base: NewToolCall): Promise<Outcome> {
    const timeoutMs = outputTimeoutMs(def);
    const entry: NewToolCall = { ...base, tool_call_output_timeout_ms: timeoutMs };
    return new Promise<Outcome>((resolve) => {
      const handle = this.host.timers.set(() => {
        this.waiting.delete(call.callId);
        resolve({
          entry: { ...entry, timed_out: true, error_message: `no tool_call_output within ${timeoutMs} ms` },
          output: JSON.stringify({ error: 'timed out' }),
        });
      }, timeoutMs);
      this.waiting.set(call.callId, {
        responseId: call.responseId,
        name: tool.name,
        resolve: (output) => {
          this.host.timers.clear(handle);
          this.host.send({ type: 'tool_call_output_processed', tool_call_id: call.callId });
          const body =
            output !== null && typeof output === 'object' && !Array.isArray(output)
              ? (output as Record<string, unknown>)
              : { output };
          resolve({
            entry: { ...entry, response_body: body },
            output: typeof output === 'string' ? output : JSON.stringify(output),
          });
        },
      });
      this.host.send({
        type: 'tool_call',
        tool_call_id: call.callId,
        tool_name: tool.name,
        parameters: call.arguments,
      });
    });
  }

  /** The conversation ended: waiting client calls time out now, searches in flight are aborted. */
  cancelAll(): void {
    this.searches.abort();
    for (const [id, w] of this.waiting) {
      this.waiting.delete(id);
      w.resolve({ error: 'conversation ended' });
    }
  }
}

/** A tool call argument the model should have sent as text: numbers taken as written, anything else as JSON. */
function argumentText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  return typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v);
}

function submit(session: SpeechEngineSession | null, callId: string, output: string, after: ReplyAfter): void {
  session?.submitToolOutput(callId, output, after.respond, after.speechOnly ? { speechOnly: true } : undefined);
}
