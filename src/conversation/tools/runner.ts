// Runs the tool calls of a live conversation: context, webhook, WebSocket (answered by the client), and the
// built-ins. Sync tools answer the engine when they finish; async tools answer at once and add their result to the
// context when it arrives (speaking it when `wait_for_response`). Every call is recorded.
import type { EngineToolCall, SpeechEngineSession } from '../../engines/engine.js';
import type { NewToolCall } from '../../store/conversations.js';
import type { ConversationTimers } from '../host.js';
import type { ServerEvent } from '../../schemas/sts.js';
import { outputTimeoutMs, type LiveTool } from './catalog.js';
import { callWebhook, type ReservedParameters } from './webhook.js';

/** What the runner needs of its conversation. */
export interface ToolHost {
  session(): SpeechEngineSession | null;
  send(event: ServerEvent): void;
  timers: ConversationTimers;
  fetch: typeof fetch;
  reserved(): ReservedParameters;
  /** Built-ins that act on the conversation. */
  endAfterResponse(responseId: string): void;
  chooseNotToRespond(responseId: string, respondAfterSec: number | null): void;
  transferToAgent(agentName: string): Promise<string | null>;
}

type Outcome = { entry: NewToolCall; output: string };

export class ToolRunner {
  private readonly waiting = new Map<string, { resolve(output: unknown): void; responseId: string; name: string }>();

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

  /** Runs one call; resolves with its record entry once it has settled. */
  async run(call: EngineToolCall): Promise<NewToolCall> {
    const tool = this.tools.get(call.name);
    const session = this.host.session();
    if (!tool) {
      const message = `unknown tool ${call.name}`;
      session?.submitToolOutput(call.callId, JSON.stringify({ error: message }), true);
      return { tool: { id: 'unknown', name: call.name }, request_body: call.arguments, response_body: null, timed_out: false, error_message: message };
    }
    const def = tool.definition;
    const respond = !(def.forbid_speech_after_tool_call ?? false);
    const isAsync = def.execution_mode === 'async' && (tool.type === 'custom_webhook' || tool.type === 'custom_websocket');
    if (isAsync) session?.submitToolOutput(call.callId, JSON.stringify({ status: 'started' }), respond);
    const { entry, output } = await this.execute(tool, call);
    const s = this.host.session();
    if (!s) return entry;
    if (!isAsync) s.submitToolOutput(call.callId, output, respond);
    else if (def.wait_for_response) {
      s.updateSession({ systemMessage: `Result of ${tool.name}: ${output}` });
      s.createResponse();
    } else s.updateSession({ systemMessage: `Result of ${tool.name}: ${output}` });
    return entry;
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
    const base: NewToolCall = { tool: { id: tool.id, name: tool.name }, request_body: call.arguments, response_body: null, timed_out: false, error_message: null };
    switch (tool.type) {
      case 'custom_context':
        return { entry: { ...base, response_body: { context: def.context ?? '' } }, output: def.context ?? '' };
      case 'custom_webhook':
        return callWebhook(tool, call.arguments, this.host.reserved(), this.host);
      case 'custom_websocket':
        return this.viaClient(tool, call, base);
      case 'built_in_natural_conversation_ending':
        this.host.endAfterResponse(call.responseId);
        this.host.session()?.submitToolOutput(call.callId, 'ending the conversation', false);
        return { entry: { ...base, response_body: { ended: true } }, output: 'ending the conversation' };
      case 'built_in_keypad_input': {
        const digits = String(call.arguments.digits ?? '');
        if (!/^[0-9A-Da-d*#]+$/.test(digits)) return { entry: { ...base, error_message: `not DTMF digits: ${digits}` }, output: 'invalid digits' };
        this.host.send({ type: 'dtmf', digits });
        return { entry: { ...base, response_body: { digits } }, output: `pressed ${digits}` };
      }
      case 'built_in_choose_not_to_respond':
        this.host.chooseNotToRespond(call.responseId, def.respond_after_sec ?? null);
        return { entry: { ...base, response_body: { responded: false } }, output: 'not responding' };
      case 'built_in_transfer_to_agent': {
        const name = String(call.arguments.agent_name ?? '');
        const allowed = def.agents_to_transfer_to;
        if (allowed && !allowed.includes(name)) return { entry: { ...base, error_message: `agent ${name} is not a transfer target` }, output: 'transfer refused' };
        const problem = await this.host.transferToAgent(name);
        if (problem) return { entry: { ...base, error_message: problem }, output: `transfer failed: ${problem}` };
        return { entry: { ...base, response_body: { transferred_to: name } }, output: `transferred to ${name}` };
      }
      case 'built_in_transfer_to_phone_number':
        return { entry: { ...base, error_message: 'phone transfers need a phone call' }, output: 'transfer not available in this conversation' };
    }
  }

  private viaClient(tool: LiveTool, call: EngineToolCall, base: NewToolCall): Promise<Outcome> {
    const timeoutMs = outputTimeoutMs(tool.definition);
    const entry: NewToolCall = { ...base, tool_call_output_timeout_ms: timeoutMs };
    return new Promise<Outcome>((resolve) => {
      const handle = this.host.timers.set(() => {
        this.waiting.delete(call.callId);
        resolve({ entry: { ...entry, timed_out: true, error_message: `no tool_call_output within ${timeoutMs} ms` }, output: JSON.stringify({ error: 'timed out' }) });
      }, timeoutMs);
      this.waiting.set(call.callId, {
        responseId: call.responseId,
        name: tool.name,
        resolve: (output) => {
          this.host.timers.clear(handle);
          this.host.send({ type: 'tool_call_output_processed', tool_call_id: call.callId });
          const body = output !== null && typeof output === 'object' && !Array.isArray(output) ? (output as Record<string, unknown>) : { output };
          resolve({ entry: { ...entry, response_body: body }, output: typeof output === 'string' ? output : JSON.stringify(output) });
        },
      });
      this.host.send({ type: 'tool_call', tool_call_id: call.callId, tool_name: tool.name, parameters: call.arguments });
    });
  }

  /** The conversation ended: waiting client calls time out now. */
  cancelAll(): void {
    for (const [id, w] of this.waiting) {
      this.waiting.delete(id);
      w.resolve({ error: 'conversation ended' });
    }
  }
}
