// The speech engine interface (docs/ARCHITECTURE.md, "Speech engines"): one session per conversation, audio in at the
// engine's rate, control in, events out through hooks. Every engine (echo, scripted, openai-realtime, cascade)
// implements it; the conversation engine (src/conversation/) is its only caller.

/** A function the model may call: built-ins and custom tools alike, parameters as a JSON-Schema object. */
export interface EngineTool {
  name: string;
  description: string;
  parameters: {
    type: 'object';
    properties: Record<string, unknown>;
    required?: string[];
    additionalProperties?: boolean;
  };
  /**
   * A response that calls this tool is not spoken (speech_before_tool_call `suppressed`). An engine that knows a
   * response's calls before it speaks (a chat completion, a script) does not speak such a response; the
   * conversation drops what it has not yet played when the call arrives, for every engine.
   */
  speechSuppressed?: boolean;
}

/** How a response the conversation asks for (createResponse, or the reply after a tool output) may go on. */
export interface ResponseOptions {
  /**
   * The response may speak but calls no tool (tool_choice `none`): the reply after the output of a tool that allows
   * no chaining, or the line spoken before a tool call that requires speech first.
   */
  speechOnly?: boolean;
}

/**
 * What a session speaks with and listens for: the agent's voice and language settings. Given at open, and changed
 * mid-conversation by updateSession when the conversation transfers to another agent (every agent field that
 * concerns a live conversation takes effect).
 */
export interface SpeechSettings {
  /** A catalog voice id (src/api/voices.ts); each engine maps it to its own voice. */
  voiceId: string;
  defaultLanguage: string;
  additionalLanguages: readonly string[];
  boostedKeywords: readonly string[];
  /** Words spoken as given (pronunciation dictionary). */
  pronunciations: readonly { word: string; pronunciation: string }[];
}

export interface EngineSessionOptions extends SpeechSettings {
  conversationId: string;
  /** Resolved: template and system variables already substituted. */
  systemPrompt: string;
  tools: readonly EngineTool[];
  /** Aborted when the conversation ends while the engine is still opening. */
  signal: AbortSignal;
  /**
   * Engine-specific settings from the conversation's configuration, when it carries any (optional): the
   * `scripted_engine` key holds the scripted engine's script (src/engines/scripted.ts). Other engines ignore it.
   */
  engineSettings?: Readonly<Record<string, unknown>>;
  /**
   * The sample rate of the client's audio (its input format), when known. An engine free to pick its own rate
   * may run at it, so the conversation resamples nothing on the way in (echo does, for 8 kHz clients).
   */
  clientSampleRate?: number;
}

/** A change to an open session (SpeechEngineSession.updateSession); every field optional. */
export interface SessionUpdate extends Partial<SpeechSettings> {
  /** Resolved, as at open. */
  systemPrompt?: string;
  tools?: readonly EngineTool[];
  /** A system message added to the conversation's context (not a setting). */
  systemMessage?: string;
}

/** A response is one assistant utterance: from createResponse or speak until onResponseDone. */
export type ResponseId = string;

export interface EngineToolCall {
  responseId: ResponseId;
  callId: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** Events out of a session. Called synchronously from the engine; handlers must not throw. */
export interface EngineHooks {
  /** What the user said in the current turn; `final` once the turn's transcript is complete. */
  onInputTranscript(text: string, final: boolean, language?: string): void;
  /** Assistant audio at the session's sampleRate. The buffer is lent for the duration of the call only. */
  onAssistantAudio(responseId: ResponseId, pcm: Int16Array): void;
  /** Text of what the assistant is saying, as it becomes known (may arrive before or with its audio). */
  onAssistantText(responseId: ResponseId, delta: string): void;
  onToolCall(call: EngineToolCall): void;
  /** The response finished generating (its audio may still be playing out). */
  onResponseDone(responseId: ResponseId): void;
  /** A fatal failure: the conversation ends with ended_by `error` and its record is saved. */
  onError(error: EngineError): void;
}

export interface SpeechEngineSession {
  /** PCM sample rate the session consumes and produces. */
  readonly sampleRate: number;
  /** Whether the engine reports words as the user speaks (so min_words_to_interrupt can apply). */
  readonly transcribesLive: boolean;
  /** User audio, at sampleRate, every frame while the user's turn is open (prebuffer included). */
  appendAudio(pcm: Int16Array): void;
  /**
   * Parley's VAD ended the user's speech: the turn is complete; the engine transcribes it (onInputTranscript, final)
   * and answers it, unless `respond` is false (a listen-only call: transcribed only, no response).
   */
  commitUserTurn(respond?: boolean): void;
  /** The open user turn is dropped (speech too short, or muted). */
  clearUserTurn(): void;
  /** Generate a reply now (generate_reply, a generated welcome message or poke); instructions guide it. */
  createResponse(instructions?: string, options?: ResponseOptions): ResponseId;
  /** Speak this text verbatim (welcome message, poke text, say). */
  speak(text: string): ResponseId;
  /**
   * The output of a tool call. When respond is true the engine replies once every call of the response has its
   * output (with `options`: speech only when any of them asked so); when false it does not reply to this output
   * (forbid_speech_after_tool_call: the conversation waits for the user).
   */
  submitToolOutput(callId: string, output: string, respond: boolean, options?: ResponseOptions): void;
  /** Barge-in: stop the response now; only playedMs of its audio reached the user (truncate its text there). */
  cancelResponse(responseId: ResponseId, playedMs: number): void;
  /**
   * Changes the session mid-conversation: update_system_prompt, update_tools_subset, add_system_message, DTMF, and a
   * transfer to another agent (its prompt, tools and speech settings at once). Fields left out stay as they are.
   * Speech settings apply to what starts after the call: responses created and user turns committed from now on; a
   * response already under way finishes with the voice it started with. An engine that cannot make a change keeps
   * the old setting, logs why and does not fail (see `voiceId`).
   */
  updateSession(update: SessionUpdate): void;
  /**
   * The catalog voice id the session speaks with now. After updateSession({ voiceId }) it is the new one, unless
   * the engine could not change voice mid-session (openai-realtime: the protocol allows no voice change once the
   * session has produced audio), when it stays the old one. Optional for test doubles; every engine reports it.
   */
  readonly voiceId?: string;
  close(): Promise<void>;
}

export interface SpeechEngine {
  readonly name: string;
  open(options: EngineSessionOptions, hooks: EngineHooks): Promise<SpeechEngineSession>;
}

/** The one error type of this boundary. */
export class EngineError extends Error {
  constructor(
    message: string,
    readonly engine: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'EngineError';
  }
}

/** The speech settings of `from` alone: the copy a session keeps and replaces as updates arrive. */
export function speechSettingsOf(from: SpeechSettings): SpeechSettings {
  return {
    voiceId: from.voiceId,
    defaultLanguage: from.defaultLanguage,
    additionalLanguages: from.additionalLanguages,
    boostedKeywords: from.boostedKeywords,
    pronunciations: from.pronunciations,
  };
}

/** `current` with the speech settings an update carries (those it leaves out unchanged). */
export function updatedSpeech(current: SpeechSettings, update: SessionUpdate): SpeechSettings {
  return {
    voiceId: update.voiceId ?? current.voiceId,
    defaultLanguage: update.defaultLanguage ?? current.defaultLanguage,
    additionalLanguages: update.additionalLanguages ?? current.additionalLanguages,
    boostedKeywords: update.boostedKeywords ?? current.boostedKeywords,
    pronunciations: update.pronunciations ?? current.pronunciations,
  };
}
