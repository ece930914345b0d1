// What the tool runner (tools/runner.ts) may do to a live conversation, and how each call fits with the
// assistant's speech. The reserved parameters of webhook calls; the built-ins that act on the conversation: natural
// conversation ending (after the goodbye has played), choose not to respond (the response dropped unheard; a
// follow-up after respond_after_sec if the user stays silent, dropped as soon as the user speaks), transfer to
// agent. Every engine tool call is dispatched here, and the tool's speech rules (tools/speech-rules.ts) applied to
// it, whatever the engine:
// - a call in a speech-only response, or made after speech with forbid_tool_call_after_speech, is not executed;
// - speech_before_tool_call `suppressed`: the speech of its response is dropped (what has not played yet);
// - `uninterruptible`: the user cannot barge in while the call runs;
// - speech required before the call and none made: the engine is asked for a line (speech only), and the call runs
//   once it has played; wait_for_speech_before_tool_call: the call runs once the speech before it has played. A
//   call whose speech the user interrupted is not executed;
// - forbid_speech_after_tool_call: no reply to the outputs of its response; allow_tool_chaining false: the reply is
//   speech only (the engine is asked so, and a call the engine still makes in it is not executed).
// Each call's entry lands on the utterance spoken before it, which records it.
import type { EngineToolCall, ResponseId, SpeechEngineSession } from '../engines/engine.js';
import type { WebSearch } from '../engines/web-search.js';
import type { EndedBy } from '../schemas/conversations.js';
import type { ServerEvent } from '../schemas/sts.js';
import type { NewToolCall } from '../store/conversations.js';
import type { Logger } from '../log.js';
import type { AssistantSpeech } from './assistant-speech.js';
import type { ConversationOrigin, ConversationTimers } from './host.js';
import { ownedTimer, type OwnedTimer } from './timer.js';
import type { LiveTool } from './tools/catalog.js';
import type { PhoneTransferRequest, PhoneTransferResult } from './tools/phone-transfer.js';
import type { ReplyAfter, ToolHost, ToolRunner } from './tools/runner.js';
import { toolRules, type ToolRules } from './tools/speech-rules.js';
import type { ReservedParameters } from './tools/webhook.js';
import type { Utterance } from './utterance.js';

const MS_PER_SEC = 1000;

/** What the engine is asked for when a tool that requires speech before it is called without any. */
export function speechBeforeInstructions(toolName: string): string {
  return (
    `You are about to call the tool "${toolName}". First say one short sentence to the user about what you are ` +
    'going to do. Reply with that sentence only.'
  );
}

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
  /** Transfers the phone call (tools/phone-transfer.ts); null when the conversation is not a phone call. */
  transferToPhoneNumber(request: PhoneTransferRequest): Promise<PhoneTransferResult | null>;
}

/** How the engine replies to the outputs of one response's calls (set as its calls arrive). */
interface ResponseReply {
  /** A call of it forbids speech after its output. */
  silent: boolean;
  /** A call of it allows no chaining: the reply is speech only. */
  speechOnly: boolean;
}

/** One call on its way: the utterance of its response, and the one its entry lands on (a line spoken for it). */
interface CallInFlight {
  call: EngineToolCall;
  owner: Utterance;
  landing: Utterance;
  settled: Promise<void> | null;
}

export class ConversationToolHost implements ToolHost {
  readonly fetch: typeof fetch;
  /** The response after whose playout the conversation ends (natural conversation ending). */
  private endAfter: ResponseId | null = null;
  /** respond_after_sec follow-ups not yet due. */
  private readonly followUps = new Set<OwnedTimer>();
  private readonly replies = new WeakMap<Utterance, ResponseReply>();
  /** The line asked for before the calls of a response that said nothing (one per response). */
  private readonly lines = new WeakMap<Utterance, Promise<Utterance | null>>();

  constructor(
    private readonly target: ToolTarget,
    private readonly speech: AssistantSpeech,
    readonly timers: ConversationTimers,
    private readonly who: ConversationOrigin,
    private readonly log: Logger,
    fetchFn: typeof fetch,
    readonly search: WebSearch | null = null,
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

  /** Runs an engine tool call on `runner` under its tool's speech rules; its entry lands on the utterance spoken before it. */
  dispatch(runner: ToolRunner, call: EngineToolCall): void {
    const owner = this.speech.of(call.responseId);
    const tool = runner.byName.get(call.name);
    const rules = tool ? toolRules(tool.definition) : null;
    const reply = this.replyOf(owner);
    if (rules?.forbidSpeechAfter) reply.silent = true;
    if (rules && !rules.chaining) reply.speechOnly = true;
    const flight: CallInFlight = { call, owner, landing: owner, settled: null };
    const p = (tool && rules ? this.run(runner, tool, rules, flight) : runner.run(call, () => this.replyAfter(owner)))
      .then((entry) => void flight.landing.toolCalls.push(entry))
      .catch((err: unknown) =>
        this.log.error({ err, conversationId: this.target.conversationId() }, 'tool call failed'),
      )
      .finally(() => {
        owner.pendingTools.delete(p);
        flight.landing.pendingTools.delete(p);
      });
    flight.settled = p;
    owner.pendingTools.add(p);
  }

  /** The speech rules of one call, then the call itself (or its refusal). */
  private async run(runner: ToolRunner, tool: LiveTool, rules: ToolRules, flight: CallInFlight): Promise<NewToolCall> {
    const { call, owner } = flight;
    if (owner.speechOnly)
      return runner.refuse(
        call,
        tool,
        'a speech-only response calls no tool (after a tool that allows no chaining, or the line before a call)',
      );
    if (rules.forbidCallAfterSpeech && owner.hasSpeech)
      return runner.refuse(
        call,
        tool,
        'called after the assistant spoke in this response (forbid_tool_call_after_speech)',
      );
    if (rules.speechBefore === 'suppressed') this.speech.silence(owner.responseId);
    const release = rules.uninterruptible ? this.speech.holdBargeIn() : null;
    try {
      let spoken: Utterance | null = null;
      let mark = 0;
      if (rules.speechBefore === 'required' && !owner.hasSpeech) {
        spoken = await this.lineBefore(flight, tool.name);
        mark = Infinity;
      } else if (rules.waitForSpeech && owner.hasSpeech) {
        spoken = owner;
        mark = owner.queuedSamples;
      }
      if (spoken) await this.speech.untilPlayed(spoken, mark);
      if (!this.target.session()) return runner.refuse(call, tool, 'the conversation ended before the call ran');
      // Stopped before it was heard to the mark: interrupted by the user (or silenced by another call).
      if (spoken && spoken.playedSamples < mark && (spoken.state === 'interrupted' || spoken.silenced)) {
        return runner.refuse(call, tool, 'the user interrupted the speech before the call');
      }
      return await runner.run(call, () => this.replyAfter(owner));
    } finally {
      release?.();
    }
  }

  /**
   * The line spoken before the calls of `flight.owner`, which said nothing: once its response is done, the engine is
   * asked for one (speech only); the call's entry lands on it. One line per response, whatever its calls. The owner
   * itself when the conversation ended first (the call is then refused and recorded there).
   */
  private async lineBefore(flight: CallInFlight, toolName: string): Promise<Utterance> {
    const { owner } = flight;
    owner.callsAfterLine = true;
    let line = this.lines.get(owner);
    if (!line) {
      line = this.speech.untilPlayed(owner, Infinity).then(() => {
        const session = this.target.session();
        if (!session) return null;
        const u = this.speech.track(
          session.createResponse(speechBeforeInstructions(toolName), { speechOnly: true }),
          'reply',
          true,
        );
        u.speechOnly = true;
        return u;
      });
      this.lines.set(owner, line);
    }
    const spoken = await line;
    if (!spoken) return owner;
    flight.landing = spoken;
    spoken.pendingTools.add(flight.settled!);
    return spoken;
  }

  private replyOf(u: Utterance): ResponseReply {
    let r = this.replies.get(u);
    if (!r) this.replies.set(u, (r = { silent: false, speechOnly: false }));
    return r;
  }

  /** How the engine replies to an output of `owner`'s calls, asked as it is submitted. */
  private replyAfter(owner: Utterance): ReplyAfter {
    const r = this.replyOf(owner);
    if (!r.silent && r.speechOnly) this.speech.engineReplySpeechOnly();
    return { respond: !r.silent, speechOnly: r.speechOnly };
  }

  replyWithResult(speechOnly: boolean): void {
    const session = this.target.session();
    if (!session) return;
    const u = this.speech.track(
      session.createResponse(undefined, speechOnly ? { speechOnly: true } : undefined),
      'reply',
      true,
    );
    u.speechOnly = speechOnly;
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

  transferToPhoneNumber(request: PhoneTransferRequest): Promise<PhoneTransferResult | null> {
    return this.target.transferToPhoneNumber(request);
  }

  /** The user spoke: they did not stay silent, so follow-ups not yet due are dropped; the engine answers them freely. */
  userSpoke(): void {
    this.cancel();
    this.speech.userTurn();
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
