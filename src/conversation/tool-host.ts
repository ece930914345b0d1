// What the tool runner (tools/runner.ts) may do to a live conversation: the reserved parameters of webhook calls, and
// the built-ins that act on it: natural conversation ending (after the goodbye has played), choose not to respond
// (the response dropped unheard; a follow-up after respond_after_sec if the user stays silent, dropped as soon as the
// user speaks), transfer to agent. Each call is dispatched on the utterance of its response, which records it.
import type { EngineToolCall, ResponseId, SpeechEngineSession } from '../engines/engine.js';
import type { EndedBy } from '../schemas/conversations.js';
import type { ServerEvent } from '../schemas/sts.js';
import type { Logger } from '../log.js';
import type { AssistantSpeech } from './assistant-speech.js';
import type { ConversationOrigin, ConversationTimers } from './host.js';
import { ownedTimer, type OwnedTimer } from './timer.js';
import type { ToolHost, ToolRunner } from './tools/runner.js';
import type { ReservedParameters } from './tools/webhook.js';
import type { Utterance } from './utterance.js';

const MS_PER_SEC = 1000;

/** What the built-ins need of their conversation. */
export interface ToolTarget {
  conversationId(): string | null;
  session(): SpeechEngineSession | null;
  emit(event: ServerEvent): void;
  end(endedBy: EndedBy): void;
  /** The user is in a turn now. */
  userSpeaking(): boolean;
  /** Switches the conversation to another agent's settings and tools: a problem, or null when done. */
  transferToAgent(agentName: string): Promise<string | null>;
}

export class ConversationToolHost implements ToolHost {
  readonly fetch: typeof fetch;
  /** The response after whose playout the conversation ends (natural conversation ending). */
  private endAfter: ResponseId | null = null;
  /** respond_after_sec follow-ups not yet due. */
  private readonly followUps = new Set<OwnedTimer>();

  constructor(
    private readonly target: ToolTarget,
    private readonly speech: AssistantSpeech,
    readonly timers: ConversationTimers,
    private readonly who: ConversationOrigin,
    private readonly log: Logger,
    fetchFn: typeof fetch,
  ) {
    this.fetch = fetchFn;
  }

  session(): SpeechEngineSession | null {
    return this.target.session();
  }

  send(event: ServerEvent): void {
    this.target.emit(event);
  }

  reserved(): ReservedParameters {
    const info = this.who.callInfo ?? null;
    return {
      conversation_id: this.target.conversationId()!,
      call_info: info,
      from_phone_number: info?.from_phone_number ?? null,
      to_phone_number: info?.to_phone_number ?? null,
      telephony_call_sid: null,
      pre_tool_text: '',
    };
  }

  /** Runs an engine tool call on `runner`; its entry lands on the utterance of its response. */
  dispatch(runner: ToolRunner, call: EngineToolCall): void {
    const owner = this.speech.of(call.responseId);
    const p = runner
      .run(call)
      .then((entry) => void owner.toolCalls.push(entry))
      .catch((err: unknown) => this.log.error({ err, conversationId: this.target.conversationId() }, 'tool call failed'))
      .finally(() => owner.pendingTools.delete(p));
    owner.pendingTools.add(p);
  }

  endAfterResponse(responseId: ResponseId): void {
    this.endAfter = responseId;
    const u = this.speech.find(responseId);
    if (u && !u.isActive) this.endNow();
  }

  /** `u` has played out: true when the conversation ends after it (and it is ending now). */
  endsAfter(u: Utterance): boolean {
    if (this.endAfter !== u.responseId) return false;
    this.endNow();
    return true;
  }

  chooseNotToRespond(responseId: ResponseId, respondAfterSec: number | null): void {
    this.speech.silence(responseId);
    this.target.emit({ type: 'assistant_chose_not_to_respond' });
    if (respondAfterSec === null) return;
    const followUp = ownedTimer(this.timers, respondAfterSec * MS_PER_SEC, () => {
      this.followUps.delete(followUp);
      const session = this.target.session();
      if (session && !this.target.userSpeaking()) this.speech.track(session.createResponse(), 'reply', true);
    });
    this.followUps.add(followUp);
    followUp.start();
  }

  transferToAgent(agentName: string): Promise<string | null> {
    return this.target.transferToAgent(agentName);
  }

  /** The user spoke: they did not stay silent, so follow-ups not yet due are dropped. */
  userSpoke(): void {
    this.cancel();
  }

  /** The conversation ends: follow-ups not yet due are dropped. */
  cancel(): void {
    for (const f of this.followUps) f.cancel();
    this.followUps.clear();
  }

  private endNow(): void {
    this.target.emit({ type: 'assistant_ended_conversation' });
    this.target.end('assistant');
  }
}
