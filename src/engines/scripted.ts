// The `scripted` engine (docs/ARCHITECTURE.md, "Speech engines"): offline and deterministic, for tests and demos. A
// script says, turn by turn, what the engine "heard" (reported word by word while the user speaks, so
// min_words_to_interrupt applies), what it says (local text-to-speech: audio as long as the text), which tools it
// calls, what it says after their output, and when it ends.
//
// Where the script comes from, first found wins: the conversation's `scripted_engine` setting
// (EngineSessionOptions.engineSettings.scripted_engine), the registry's script (tests), PARLEY_SCRIPTED_ENGINE_FILE.
import { z } from 'zod';
import type { Logger } from '../log.js';
import type { ResamplerRate } from '../media/native/resampler.js';
import { applyPronunciations } from './echo.js';
import {
  EngineError,
  speechSettingsOf,
  updatedSpeech,
  type EngineHooks,
  type EngineSessionOptions,
  type EngineTool,
  type EngineToolCall,
  type ResponseId,
  type ResponseOptions,
  type SessionUpdate,
  type SpeechEngine,
  type SpeechEngineSession,
  type SpeechSettings,
} from './engine.js';
import type { LocalTts } from './local-tts.js';
import { Playback, type PlaybackStep } from './playback.js';

export const SCRIPTED_ENGINE = 'scripted';
export const SCRIPTED_SAMPLE_RATE: ResamplerRate = 16_000;
/** User audio per word reported live, unless the script says otherwise. */
export const DEFAULT_WORD_MS = 250;
/** The tool `end: true` calls unless the script names another: the agent's natural-conversation-ending tool. */
export const DEFAULT_END_TOOL = 'end_conversation';

const toolCall = z.object({ name: z.string().min(1), arguments: z.record(z.string(), z.unknown()).default({}) });

const spoken = z.object({
  say: z.string().optional(),
  tool_calls: z.array(toolCall).default([]),
  end: z.literal(true).optional(),
});

/** A response: what it says and calls, and what is said (and called) once the outputs of its calls are in. */
const scriptResponse = spoken.extend({
  /** Said once the outputs of this response's tool calls are in (when one of them asks for a reply). */
  after_tool_output: spoken.optional(),
});

export const scriptTurn = scriptResponse.extend({
  /** The user's turn as transcribed (input_text). */
  heard: z.string().default(''),
  /** Live transcript steps while the user speaks, one per word_ms of audio; default: the words of `heard`. */
  words: z.array(z.string()).optional(),
});

export const engineScript = z
  .object({
    turns: z.array(scriptTurn).default([]),
    /** Responses to createResponse (generate_reply, generated welcome or poke), in order; then its instructions. */
    responses: z.array(scriptResponse).default([]),
    word_ms: z.number().int().positive().default(DEFAULT_WORD_MS),
    end_tool: z.string().min(1).default(DEFAULT_END_TOOL),
  })
  .strict();
export type EngineScript = z.infer<typeof engineScript>;
export type ScriptTurn = z.infer<typeof scriptTurn>;
type Spoken = z.infer<typeof spoken>;
type After = ScriptTurn['after_tool_output'];

/** What a speech-only response (ResponseOptions.speechOnly) keeps of a scripted one: its words, no call, no end. */
function speechOnly(what: Spoken): Spoken {
  return { say: what.say, tool_calls: [] };
}

/** Parses a script; EngineError naming the first problem. */
export function parseScript(value: unknown): EngineScript {
  const parsed = engineScript.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new EngineError(`invalid script at ${issue.path.join('.') || '(root)'}: ${issue.message}`, SCRIPTED_ENGINE);
  }
  return parsed.data;
}

export interface ScriptedEngineOptions {
  tts: LocalTts;
  voiceFor(voiceId: string): string;
  log: Logger;
  /** The script of conversations whose settings carry none. */
  script?: EngineScript | null;
  sampleRate?: ResamplerRate;
}

export function createScriptedEngine(options: ScriptedEngineOptions): SpeechEngine {
  return {
    name: SCRIPTED_ENGINE,
    async open(session, hooks) {
      if (session.signal.aborted) throw new EngineError('conversation ended while the engine opened', SCRIPTED_ENGINE);
      const own = session.engineSettings?.scripted_engine;
      const script = own !== undefined ? parseScript(own) : options.script;
      if (!script)
        throw new EngineError('no script: set scripted_engine or PARLEY_SCRIPTED_ENGINE_FILE', SCRIPTED_ENGINE);
      return new ScriptedSession(options, script, session, hooks);
    },
  };
}

export class ScriptedSession implements SpeechEngineSession {
  readonly sampleRate: ResamplerRate;
  readonly transcribesLive = true;
  private readonly playback: Playback;
  private readonly wordSamples: number;
  private nextTurn = 0;
  private nextResponse = 0;
  private heardSamples = 0;
  private wordsReported = 0;
  /**
   * Tool calls awaiting output: call id -> its response, what is said once all of that response's are in, and how
   * (a reply at all, speech only).
   */
  private readonly pending = new Map<
    string,
    { responseId: ResponseId; after: After; respond: boolean; speechOnly: boolean }
  >();
  /** The tools offered now (updateSession replaces them): a call of a speech-suppressed one silences its response. */
  private tools: readonly EngineTool[];
  /** Voice and pronunciations it speaks with; a transfer to another agent replaces them (updateSession). */
  private speech: SpeechSettings;
  /** Every updateSession call, in order: what tests read to see what the conversation told the engine. */
  readonly updates: SessionUpdate[] = [];
  private closed = false;

  constructor(
    private readonly options: ScriptedEngineOptions,
    private readonly script: EngineScript,
    private readonly session: EngineSessionOptions,
    private readonly hooks: EngineHooks,
  ) {
    this.sampleRate = options.sampleRate ?? SCRIPTED_SAMPLE_RATE;
    this.wordSamples = Math.round((this.sampleRate * script.word_ms) / 1000);
    this.playback = new Playback('scripted', this.sampleRate, hooks);
    this.speech = speechSettingsOf(session);
    this.tools = session.tools;
  }

  get voiceId(): string {
    return this.speech.voiceId;
  }

  appendAudio(pcm: Int16Array): void {
    if (this.closed) return;
    const turn = this.script.turns[this.nextTurn];
    if (!turn) return;
    this.heardSamples += pcm.length;
    const words = liveWords(turn);
    const due = Math.min(words.length, Math.floor(this.heardSamples / this.wordSamples));
    if (due > this.wordsReported) {
      this.wordsReported = due;
      this.hooks.onInputTranscript(words.slice(0, due).join(' '), false);
    }
  }

  commitUserTurn(respond = true): void {
    if (this.closed) return;
    const index = this.nextTurn;
    const turn = this.script.turns[index];
    this.resetHearing();
    if (!turn) {
      this.hooks.onInputTranscript('', true);
      this.options.log.debug(
        { conversationId: this.session.conversationId },
        'scripted engine: script over, turn unanswered',
      );
      return;
    }
    this.nextTurn++;
    this.hooks.onInputTranscript(turn.heard, true);
    if (respond) this.respond(turn, `call_${index + 1}`, turn.after_tool_output);
  }

  clearUserTurn(): void {
    this.resetHearing();
  }

  createResponse(instructions?: string, options?: ResponseOptions): ResponseId {
    const next = this.script.responses[this.nextResponse];
    if (next) {
      this.nextResponse++;
      const prefix = `call_r${this.nextResponse}`;
      return options?.speechOnly
        ? this.respond(speechOnly(next), prefix, undefined)
        : this.respond(next, prefix, next.after_tool_output);
    }
    return this.respond({ say: instructions ?? 'Okay.', tool_calls: [] }, 'call_none', undefined);
  }

  speak(text: string): ResponseId {
    return this.respond({ say: text, tool_calls: [] }, 'call_none', undefined);
  }

  submitToolOutput(callId: string, _output: string, respond: boolean, options?: ResponseOptions): void {
    const entry = this.pending.get(callId);
    if (!entry) {
      this.options.log.warn(
        { callId, conversationId: this.session.conversationId },
        'scripted engine: output of an unknown tool call',
      );
      return;
    }
    entry.respond ||= respond;
    entry.speechOnly ||= options?.speechOnly === true;
    this.pending.delete(callId);
    // The turn continues once every call of it has its output, if any of them asked for a reply (speech only if any
    // of them asked so).
    const siblings = [...this.pending.values()].filter((p) => p.responseId === entry.responseId);
    if (siblings.length > 0) {
      for (const s of siblings) {
        s.respond ||= entry.respond;
        s.speechOnly ||= entry.speechOnly;
      }
      return;
    }
    if (!entry.respond || !entry.after) return;
    // The calls of the reply after the outputs are answered with nothing more.
    this.respond(entry.speechOnly ? speechOnly(entry.after) : entry.after, `${entry.responseId}_after`, undefined);
  }

  cancelResponse(responseId: ResponseId): void {
    this.playback.cancel(responseId);
  }

  updateSession(update: SessionUpdate): void {
    // The script decides what is said; prompt and tool changes do not alter it. Voice and pronunciations do.
    this.updates.push(update);
    this.speech = updatedSpeech(this.speech, update);
    if (update.tools !== undefined) this.tools = update.tools;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.playback.close();
  }

  private resetHearing(): void {
    this.heardSamples = 0;
    this.wordsReported = 0;
  }

  /**
   * Says `what.say`, then calls its tools (and the end tool when `end`); `after` follows their outputs. A response
   * calling a speech-suppressed tool says nothing: the script knows its calls before its speech.
   */
  private respond(what: Spoken, callPrefix: string, after: After): ResponseId {
    const id = this.playback.newId();
    if (this.closed) return id;
    const calls: EngineToolCall[] = what.tool_calls.map((call, i) => ({
      responseId: id,
      callId: `${callPrefix}_${i + 1}`,
      name: call.name,
      arguments: call.arguments,
    }));
    const endCallId = `${callPrefix}_end`;
    if (what.end) calls.push({ responseId: id, callId: endCallId, name: this.script.end_tool, arguments: {} });
    // The voice of the moment the response starts: a later update does not change it halfway.
    const voice = this.options.voiceFor(this.speech.voiceId);
    const pronunciations = this.speech.pronunciations;
    const suppressed = new Set(this.tools.filter((t) => t.speechSuppressed).map((t) => t.name));
    const silent = calls.some((c) => suppressed.has(c.name));
    this.playback.play(
      id,
      async () => {
        const steps: PlaybackStep[] = [];
        if (what.say && !silent) {
          const pcm = await this.options.tts.synthesize(
            applyPronunciations(what.say, pronunciations),
            voice,
            this.sampleRate,
          );
          steps.push({ kind: 'text', text: what.say }, { kind: 'audio', pcm });
        }
        if (calls.length > 0) {
          steps.push({
            kind: 'call',
            run: () => {
              // Every call of the turn is pending before the first is handed out (its output may come at once).
              for (const call of calls) {
                if (call.callId !== endCallId)
                  this.pending.set(call.callId, { responseId: id, after, respond: false, speechOnly: false });
              }
              for (const call of calls) this.hooks.onToolCall(call);
            },
          });
        }
        return steps;
      },
      (err) => this.fail(err),
    );
    return id;
  }

  private fail(err: unknown): void {
    if (this.closed) return;
    this.options.log.warn({ err, conversationId: this.session.conversationId }, 'scripted engine failed');
    this.hooks.onError(
      err instanceof EngineError
        ? err
        : new EngineError(`speech synthesis failed: ${(err as Error).message}`, SCRIPTED_ENGINE, { cause: err }),
    );
  }
}

function liveWords(turn: ScriptTurn): string[] {
  return turn.words ?? turn.heard.split(/\s+/).filter(Boolean);
}
