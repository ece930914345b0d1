// One live conversation, independent of its transport: the orchestrator. It walks the lifecycle of
// conversation.fsm.ts (configuration, admission, the engine session, ending and saving) and routes client messages
// and audio to its parts: turn-taking.ts (user turns, barge-in), assistant-speech.ts (utterances and playout),
// silence-timers.ts, tool-host.ts with tools/, engine-hooks.ts, and record.ts (what it leaves behind).
import type { EngineError, SpeechEngineSession } from '../engines/engine.js';
import { InboundAudio, type InboundSink } from '../media/inbound.js';
import { formatInfo, FRAME_MS } from '../media/format.js';
import type { ResamplerRate } from '../media/native/resampler.js';
import { Vad, VAD_SPEECH_END } from '../media/native/vad.js';
import type { PacedStream } from '../media/pacing-clock.js';
import type { EndedBy } from '../schemas/conversations.js';
import type { ServerEvent, SessionMessage } from '../schemas/sts.js';
import { newId } from '../store/ids.js';
import { callConfigurationEndpoint } from './config-endpoint.js';
import { transition, isLive, type ConversationInput, type ConversationState } from './conversation.fsm.js';
import {
  storeUnavailable,
  type ConversationClient,
  type ConversationDeps,
  type ConversationObserver,
  type ConversationOrigin,
  type ConversationStart,
  type AnsweredBy,
  type EndClose,
  type LiveConversation,
} from './host.js';
import { turnLatencyMs } from './latency.js';
import { mediaMetrics } from '../metrics/media.js';
import { AssistantSpeech } from './assistant-speech.js';
import { engineHooks } from './engine-hooks.js';
import { ConversationRecord } from './record.js';
import { applyConfig, baseSettings, playoutNoise, vadOptions, type LiveSettings } from './settings.js';
import { recordSettings, resolveStart, type StoredTool } from './resolve-start.js';
import { SilenceTimers } from './silence-timers.js';
import { ownedTimer, type OwnedTimer } from './timer.js';
import { ConversationToolHost } from './tool-host.js';
import { TurnTaking } from './turn-taking.js';
import { engineTool, liveTools, storedToolNames, type LiveTool } from './tools/catalog.js';
import { ToolRunner } from './tools/runner.js';
import type { PhoneTransferRequest, PhoneTransferResult } from './tools/phone-transfer.js';
import type { Utterance } from './utterance.js';
import { substitute, systemVariables, templateValues } from './variables.js';

/**
 * WebSocket close codes (RFC 6455 7.4.1, and the IANA registry it opens): 1000 normal closure; 1008 policy
 * violation; 1011 server error; 1013 try again later (the database is unavailable).
 */
const CLOSE_NORMAL = 1000;
const CLOSE_POLICY = 1008;
const CLOSE_ERROR = 1011;
const CLOSE_TRY_AGAIN_LATER = 1013;

/**
 * The bounds of what a client can queue up (docs/sts-protocol.md, "Limits"): over one, the message is dropped (the
 * newest: what is queued already stays) and an `error` event with code `queue_full` or `invalid_audio` says so.
 */
export const CLIENT_LIMITS = {
  /** Replies (`say`, `generate_reply`) queued or speaking at once; one more is refused. */
  queued_replies: 8,
  /** `add_system_message`: a burst of this many, then one per system_message_interval_ms. */
  system_messages_burst: 16,
  system_message_interval_ms: 1000,
  /** Client audio may run this far ahead of real time (a burst after a stall); audio beyond it is dropped. */
  audio_ahead_ms: 2000,
  /** The longest audio chunk (docs/sts-protocol.md, `audio_chunk`): two 20 ms frames. */
  chunk_ms: 40,
} as const;

/** What a client is told when the conversation could not start, by the store's error (never the error's own text). */
function startFailure(err: unknown): { message: string; code: string; close: number } {
  const status = (err as { status?: unknown }).status;
  if (storeUnavailable(err))
    return {
      message: 'the database is unavailable: try again shortly',
      code: 'database_unavailable',
      close: CLOSE_TRY_AGAIN_LATER,
    };
  if (status === 400)
    return {
      message: 'the configuration holds a value that cannot be stored',
      code: 'invalid_config',
      close: CLOSE_POLICY,
    };
  return { message: 'the conversation could not be started', code: 'internal_error', close: CLOSE_ERROR };
}

/**
 * A run of keys ends this long after its last key (or at `#`): keys typed one after another (a number, a PIN) are
 * one input, answered once.
 */
export const DTMF_ENTRY_END_MS = 2000;
/** The key that ends an entry at once (the usual "then press pound"). */
const DTMF_ENTRY_END_KEY = '#';

/** The system message telling the engine who answered an outbound call, before it first speaks. */
export function answeredByMessage(a: AnsweredBy): string {
  if (a.result === 'human') return 'answering_machine: human. A person answered the call.';
  if (a.result === 'unknown')
    return 'answering_machine: unknown. It could not be told whether a person or a machine answered.';
  const beep =
    a.beep_at_ms === null
      ? 'no beep was heard'
      : `its beep sounded ${Math.round(a.beep_at_ms)} ms after the answer and is over`;
  return `answering_machine: machine. A voicemail greeting answered the call; ${beep}: leave your message now.`;
}

/** How a run of keys reads in the record's user item and transcript. */
export function dtmfTranscript(digits: string): string {
  return `DTMF ${digits}`;
}

/**
 * It is itself the sink of its inbound chain and the stream its pacing clock ticks: reached per frame from those
 * through one object, not through an object literal of closures (the literal, each closure and its context would
 * be more objects to load per frame).
 */
export class Conversation implements LiveConversation, InboundSink, PacedStream {
  state: ConversationState = 'created';
  id: string | null = null;
  readonly ended: Promise<EndedBy>;
  settings: LiveSettings | null = null;
  private resolveEnded!: (e: EndedBy) => void;
  private client: ConversationClient;
  private projectId = '';
  private projectName = 'main';
  private agent: { id: string; name: string } | null = null;
  private session: SpeechEngineSession | null = null;
  private inbound: InboundAudio | null = null;
  private readonly record: ConversationRecord;
  private readonly speech: AssistantSpeech;
  /** Set once the engine is open (the conversation is live from then on). */
  private turns: TurnTaking | null = null;
  /** Largest payload fed to the inbound chain at once: 60 ms of the input format (Opus: one packet, unbounded). */
  private maxChunkBytes = 0;
  /** The longest chunk a client may send (CLIENT_LIMITS.chunk_ms of the input format; Opus: unbounded). */
  private maxClientChunkBytes = 0;
  /** 16-bit PCM input: a chunk must hold whole samples. */
  private pcmInput = false;
  /** Milliseconds of input audio per byte (Opus: a packet counts as one 20 ms frame). */
  private msPerInputByte = 0;
  /** Client audio allowed ahead of real time now (ms; CLIENT_LIMITS.audio_ahead_ms at most), as of audioRefilledAtMs. */
  private audioCreditMs: number = CLIENT_LIMITS.audio_ahead_ms;
  private audioRefilledAtMs = 0;
  /** A run of refused chunks is told once. */
  private audioRefusing = false;
  /** add_system_message tokens (CLIENT_LIMITS.system_messages_burst at most), as of systemRefilledAtMs. */
  private systemTokens: number = CLIENT_LIMITS.system_messages_burst;
  private systemRefilledAtMs = 0;
  /**
   * Admission and the record's creation, while under way: an end meanwhile waits for it, so a record created as the
   * client left is finished at once (and its lease freed with it) rather than left open.
   */
  private recordPhase: Promise<boolean> | null = null;
  /** When the client's connection dropped, while it may still come back (null: connected, or never dropped). */
  private clientLeftAtMs: number | null = null;
  /** The input format's bytes are its samples (inbound.samplesInPlace): binary frames need no decoding copy. */
  private samplesInPlace = false;
  private startedAtMs = 0;
  private readonly toolHost: ConversationToolHost;
  private tools!: ToolRunner;
  private readonly observers = new Set<ConversationObserver>();
  /** observers.size, kept beside the fields a frame reads (the Set and its table are two more objects to load). */
  private observerCount = 0;
  private silence: SilenceTimers;
  private readonly fetch: typeof fetch;
  /** A phone call: input frames can be lost on the way (RTP), so the inbound chain conceals them. */
  private concealsLoss = false;
  /** Keys of the entry under way (pushDtmf), the times of its first and last key, and the timer that ends it. */
  private keys = '';
  private keysStartedAtMs = 0;
  private keysLastAtMs = 0;
  private readonly keysEnd: OwnedTimer;
  /** An outbound call's answering-machine detection (CallStart.answeredBy): awaited before the first speech. */
  private answeredBy: Promise<AnsweredBy> | null = null;
  /** A call's audio that arrived before the conversation was live (pushAudio, pushLost): fed in once it is. */
  private early: EarlyAudio | null = null;
  /** An STS client sent audio before it was live, and was told. */
  private toldAudioTooEarly = false;

  constructor(
    private readonly deps: ConversationDeps,
    private readonly who: ConversationOrigin,
  ) {
    this.client = deps.client;
    this.fetch = deps.fetch;
    this.ended = new Promise((r) => (this.resolveEnded = r));
    this.record = new ConversationRecord(deps.store, deps.log, {
      compressor: deps.recordingCompressor,
      externalStorage: deps.externalStorage,
    });
    this.speech = new AssistantSpeech(
      {
        emit: (e) => this.emit(e),
        session: () => this.session,
        audioSpeed: () => this.settings!.audio_speed,
        voiceId: () => this.session?.voiceId ?? this.settings!.voice_id,
        sendFrame: (pcm, encoded, text) => this.sendAssistantFrame(pcm, encoded, text),
        started: (u, atMs) => this.assistantStarted(u, atMs),
        interrupted: (u) => this.tools.interruptResponse(u.responseId),
        stopped: (u) => this.writeAssistantItem(u),
        finished: (u) => this.assistantFinished(u),
      },
      deps.timers,
    );
    this.toolHost = new ConversationToolHost(
      {
        conversationId: () => this.id,
        session: () => this.session,
        emit: (e) => this.emit(e),
        end: (endedBy) => void this.end(endedBy),
        userSpeaking: () => this.turns?.userSpeaking ?? false,
        transferToAgent: (name) => this.transferToAgent(name),
        transferToPhoneNumber: (request) => this.transferToPhoneNumber(request),
      },
      this.speech,
      deps.timers,
      who,
      deps.log,
      this.fetch,
      deps.webSearch ?? null,
    );
    this.silence = SilenceTimers.disabled(deps.timers);
    this.keysEnd = ownedTimer(deps.timers, DTMF_ENTRY_END_MS, () => this.commitKeys(true));
  }

  // ---- lifecycle ----

  /** Ending or ended: a start step that awaited finds the conversation over and goes no further. */
  private endedMeanwhile(): boolean {
    return this.state === 'ending' || this.state === 'ended';
  }

  private step(input: ConversationInput): boolean {
    const next = transition(this.state, input);
    if (next === null) return false;
    this.state = next;
    return true;
  }

  async start(start: ConversationStart): Promise<void> {
    try {
      await this.configure(start);
    } catch (err) {
      this.deps.log.error({ err, conversationId: this.id }, 'conversation failed to start');
      const failure = startFailure(err);
      if (this.id === null) {
        // The record's creation failed after admission. main released the lease of a record it could not create,
        // but a creation that timed out may yet land: the finish ends such a row and frees the lease either way.
        if (this.refuse(failure.message, failure.code, failure.close, 'error') && this.recordPhase) {
          await this.record.finish('error', this.startedAtMs, this.deps.timers.now());
        }
        return;
      }
      this.emit({ type: 'error', error: { message: failure.message, code: failure.code } });
      await this.end('error');
    }
  }

  private async configure(start: ConversationStart): Promise<void> {
    const { store } = this.deps;
    const rules = { PARLEY_ALLOW_PRIVATE_ENDPOINTS: this.deps.allowPrivateEndpoints };
    const resolved = await resolveStart(store, this.who.orgId, start);
    if (!resolved.ok) return void this.refuse(resolved.message, resolved.code);
    // Ended meanwhile (the client left): nothing was admitted.
    if (this.endedMeanwhile()) return;
    this.settings = resolved.settings;
    this.agent = resolved.agent;
    this.projectId = resolved.project.id;
    this.projectName = resolved.project.name;
    let storedTools = resolved.storedTools;
    const externalId = resolved.externalId;
    // A phone call was admitted by main (before it answered) under the id it gives.
    const id = start.kind === 'call' ? start.call.conversationId : newId('conv');
    this.concealsLoss = start.kind === 'call';
    this.answeredBy = start.kind === 'call' ? (start.call.answeredBy ?? null) : null;
    this.recordPhase = this.admitAndCreate(start.kind !== 'call', id, externalId);
    if (!(await this.recordPhase)) return;
    // Ended while the record was being made (the client left): end() finishes it.
    if (this.endedMeanwhile()) return;
    this.emit({ type: 'conversation_created', conversation_id: id });
    this.step('configure');
    await this.writeState('configuring');
    const endpoint = this.settings.configuration_endpoint;
    if (endpoint) {
      const outcome = await callConfigurationEndpoint(endpoint, this.endpointContext(), {
        fetch: this.fetch,
        timers: this.deps.timers,
        rules,
      });
      if (this.state !== 'configuring') return;
      if (!outcome.ok) {
        this.emit({
          type: 'error',
          error: { message: `configuration endpoint: ${outcome.message}`, code: outcome.endedBy },
        });
        return void (await this.end(outcome.endedBy));
      }
      this.settings = applyConfig(this.settings, outcome.overrides);
    }
    const names = storedToolNames(this.settings.tools).filter((n) => !storedTools.some((t) => t.name === n));
    if (names.length > 0)
      storedTools = storedTools.concat(await store.resolveTools(this.who.orgId, this.projectId, names));
    await this.openEngine(storedTools);
  }

  /**
   * Admits the conversation (unless main did: a phone call) and creates its record; false when admission refused
   * it (the client was told). From a granted admission on, the record is created even when the conversation has
   * ended meanwhile, so that its end finishes it and frees the lease; a creation that fails rejects (main then
   * released the lease).
   */
  private async admitAndCreate(admits: boolean, id: string, externalId: string | null): Promise<boolean> {
    const { store } = this.deps;
    if (admits) {
      const admission = await store.admit(this.who.orgId, this.projectId, id);
      if (!admission.admitted) {
        this.refuse(
          admission.reason === 'at_capacity'
            ? `the project is at its limit of ${admission.cap} active conversations`
            : 'project not found',
          admission.reason === 'at_capacity' ? 'max_active_conversations_reached' : 'not_found',
        );
        return false;
      }
    }
    this.startedAtMs = this.deps.timers.now();
    // Bound before the creation: if it fails, the record's finish still frees the lease (admitAndCreate's caller).
    this.record.bind(id);
    await store.createConversation({
      id,
      orgId: this.who.orgId,
      projectId: this.projectId,
      agent: this.agent,
      external_id: externalId,
      origin: this.who.origin,
      call_info: this.who.callInfo ?? null,
      nodeId: this.deps.nodeId ?? null,
      settings: recordSettings(this.settings!),
      started_at: new Date(this.startedAtMs),
    });
    this.id = id;
    return true;
  }

  private async openEngine(storedTools: StoredTool[]): Promise<void> {
    const s = this.settings!;
    const tools = this.liveTools(storedTools);
    this.tools = new ToolRunner(this.toolHost, tools);
    const abort = new AbortController();
    const engine = this.deps.engineFor(s.vendor_model);
    let session: SpeechEngineSession;
    try {
      session = await engine.open(
        {
          conversationId: this.id!,
          systemPrompt: this.resolve(s.system_prompt),
          voiceId: s.voice_id,
          defaultLanguage: s.default_language,
          additionalLanguages: s.additional_languages,
          tools: [...tools.values()].map(engineTool),
          boostedKeywords: s.boosted_keywords,
          pronunciations: s.pronunciation_dictionary,
          signal: abort.signal,
          engineSettings: s.engineSettings,
          clientSampleRate: formatInfo(s.inputFormat).sampleRate,
        },
        engineHooks({
          turns: () => this.turns,
          record: this.record,
          speech: this.speech,
          toolCall: (call) => this.toolHost.dispatch(this.tools, call),
          emit: (e) => this.emit(e),
          failed: (error) => this.engineFailed(error),
        }),
      );
    } catch (err) {
      this.deps.log.error({ err, conversationId: this.id }, 'engine failed to open');
      this.emit({
        type: 'error',
        error: { message: `speech engine: ${(err as Error).message}`, code: 'engine_error' },
      });
      return void (await this.end('error'));
    }
    if (this.state !== 'configuring') {
      await session.close();
      return;
    }
    this.session = session;
    const rate = session.sampleRate as ResamplerRate;
    const vad = new Vad(rate, vadOptions(s));
    const inInfo = formatInfo(s.inputFormat);
    this.maxChunkBytes = inInfo.bytesPerFrame > 0 ? inInfo.bytesPerFrame * 3 : Number.MAX_SAFE_INTEGER;
    this.maxClientChunkBytes =
      inInfo.bytesPerFrame > 0 ? (inInfo.bytesPerFrame * CLIENT_LIMITS.chunk_ms) / FRAME_MS : Number.MAX_SAFE_INTEGER;
    this.pcmInput = inInfo.encoding === 'pcm';
    this.msPerInputByte = inInfo.bytesPerFrame > 0 ? FRAME_MS / inInfo.bytesPerFrame : 0;
    this.inbound = new InboundAudio({
      format: s.inputFormat,
      engineRate: rate,
      vad,
      sink: this,
      // The STS socket's frames come over TCP and none is ever lost; a call's RTP packets may be.
      concealment: this.concealsLoss,
    });
    this.samplesInPlace = this.inbound.samplesInPlace;
    this.speech.attach({
      engineRate: rate,
      outputFormat: s.outputFormat,
      speed: s.audio_speed,
      noise: playoutNoise(s),
    });
    if (s.data_retention_policy.zero_data_retention) this.record.keepNothing();
    await this.record.openRecording(this.deps.dataDir, rate, s.external_storage_policy);
    // Ended while the recording was being opened: end() has stopped what it found (the record drops a late file).
    if (this.endedMeanwhile()) return;
    if (this.answeredBy !== null) {
      // Who answered is known (a machine: its beep is over) before the engine first speaks; the callee's audio
      // meanwhile (a greeting) is not a turn to answer.
      const outcome = await this.answeredBy;
      if (this.endedMeanwhile()) return;
      this.answered(session, outcome);
    }
    this.silence = new SilenceTimers(this.deps.timers, s, {
      clientIdle: () => void this.end('user'),
      poke: () => this.pokeUser(),
      silenceLimit: () => void this.end('assistant_silence_limit_reached'),
    });
    this.turns = new TurnTaking({
      session,
      vad,
      settings: s,
      timers: this.deps.timers,
      record: this.record,
      silence: this.silence,
      assistant: {
        speaking: () => this.speech.speaking(),
        backchannel: (text) => void this.speech.track(session.speak(text), 'backchannel', false),
      },
      emit: (e) => this.emit(e),
      userStarted: () => this.toolHost.userSpoke(),
    });
    this.step('configured');
    await this.writeState('ready');
    // Ended meanwhile (canceled, or the client left): the pacing clock must not take it back.
    if (!isLive(this.state)) return;
    this.deps.pacing.register(this);
    this.emit({ type: 'ready_to_start_conversation' });
    this.silence.clientActive();
    this.welcome();
    // After the welcome is queued: a caller who spoke from the answer on barges into it like any other.
    if (this.answeredBy === null) this.feedEarly();
    else this.early = null;
    this.resumeKeys();
  }

  /** The engine is told who answered (a system message), and the record keeps it (metadata.answering_machine). */
  private answered(session: SpeechEngineSession, outcome: AnsweredBy): void {
    session.updateSession({ systemMessage: answeredByMessage(outcome) });
    const id = this.id!;
    this.record.write(() => this.deps.store.updateConversation(id, { metadata: { answering_machine: outcome } }));
  }

  private welcome(): void {
    const s = this.settings!;
    const session = this.session!;
    if (s.listen_only_inbound_enabled && s.listen_only_inbound_message) {
      this.speech.track(session.speak(this.resolve(s.listen_only_inbound_message)), 'welcome', false);
    } else if (s.generate_welcome_message) {
      this.speech.track(
        session.createResponse('Greet the user and open the conversation.'),
        'welcome',
        s.is_welcome_message_interruptible,
      );
    } else if (s.welcome_message) {
      this.speech.track(session.speak(this.resolve(s.welcome_message)), 'welcome', s.is_welcome_message_interruptible);
    } else {
      this.silence.nobodySpeaking();
    }
  }

  /** Refused before a record exists: an error event, then the client is closed. false (a no-op) once ending. */
  private refuse(
    message: string,
    code: string,
    closeCode = CLOSE_POLICY,
    endedBy: EndedBy = 'user_validation_failed',
  ): boolean {
    if (!this.step('end')) return false;
    this.emit({ type: 'error', error: { message, code } });
    this.step('saved');
    this.client.close(closeCode, code);
    for (const o of this.observers) o.closed(endedBy);
    this.resolveEnded(endedBy);
    return true;
  }

  async end(endedBy: EndedBy, closeWith?: EndClose): Promise<void> {
    if (!this.step('end')) {
      await this.ended;
      return;
    }
    this.silence.cancel();
    this.deps.pacing.unregister(this);
    // A turn under way and keys pressed just before the end are recorded, not answered.
    this.turns?.endUnanswered();
    this.commitKeys(false);
    this.toolHost.cancel();
    this.tools?.cancelAll();
    this.speech.finishAll();
    this.record.flushUserItem();
    const session = this.session;
    this.session = null;
    if (session)
      await session
        .close()
        .catch((err: unknown) => this.deps.log.warn({ err, conversationId: this.id }, 'engine close failed'));
    await Promise.all(this.speech.pendingTools());
    // A record being created as it ended is finished too (admitAndCreate); one that failed to be created has none.
    if (this.recordPhase) await this.recordPhase.catch(() => false);
    // A client that left and never came back: the conversation ended when it left, not when the grace ran out.
    const endedAtMs = endedBy === 'user' && this.clientLeftAtMs !== null ? this.clientLeftAtMs : this.deps.timers.now();
    await this.record.finish(endedBy, this.startedAtMs, endedAtMs, this.client.mediaStats?.() ?? null);
    this.inbound?.destroy();
    this.early = null;
    this.speech.destroy();
    this.step('saved');
    if (closeWith) this.client.close(closeWith.code, closeWith.reason);
    else this.client.close(endedBy === 'error' ? CLOSE_ERROR : CLOSE_NORMAL, endedBy);
    for (const o of this.observers) o.closed(endedBy);
    this.resolveEnded(endedBy);
  }

  // ---- client input ----

  handle(message: SessionMessage): void {
    if (!isLive(this.state)) {
      if (message.type === 'audio_chunk' && this.beforeLive()) this.clientAudioTooEarly();
      return;
    }
    this.silence.clientActive();
    const session = this.session!;
    switch (message.type) {
      case 'audio_chunk': {
        const bytes = Buffer.from(message.audio, 'base64');
        if (this.clientChunkFits(bytes.length)) this.pushAudio(bytes);
        return;
      }
      case 'mute':
        return this.turns!.mute();
      case 'unmute':
        return this.turns!.unmute();
      case 'tool_call_output':
        if (!this.tools.answer(message.tool_call_id, message.output ?? null)) {
          this.emit({
            type: 'warning',
            warning: { message: `no pending tool call ${message.tool_call_id}`, code: 'unknown_tool_call' },
          });
        }
        return;
      case 'set_external_id':
        this.record.write(async () => {
          const { updated } = await this.deps.store.updateConversation(this.id!, { external_id: message.external_id });
          // Canceled through the API meanwhile (an ended conversation refuses writes; docs/ARCHITECTURE.md,
          // "Data"): stop.
          if (!updated) void this.end('user_canceled');
        });
        return;
      case 'update_system_prompt':
        this.settings!.system_prompt = message.system_prompt;
        return session.updateSession({ systemPrompt: this.resolve(message.system_prompt) });
      case 'add_system_message':
        if (!this.takeSystemToken()) {
          const { system_messages_burst: burst, system_message_interval_ms: every } = CLIENT_LIMITS;
          return this.refuseMessage(
            `add_system_message: at most ${burst} at once, then one every ${every} ms; this one was dropped`,
            'queue_full',
          );
        }
        return session.updateSession({ systemMessage: message.system_message });
      case 'update_tools_subset': {
        const subset = [...this.tools.byName.values()].filter((t) => message.tools.includes(t.name));
        return session.updateSession({ tools: subset.map(engineTool) });
      }
      case 'generate_reply': {
        if (!this.replyFits(message.type)) return;
        const parts = [
          message.system_message,
          message.user_message ? `The user said: ${message.user_message}` : null,
        ].filter(Boolean);
        this.speech.track(session.createResponse(parts.length ? parts.join('\n') : undefined), 'reply', true);
        return;
      }
      case 'say':
        if (!this.replyFits(message.type)) return;
        this.speech.track(session.speak(message.text), 'say', message.interruptible ?? true);
        return;
      case 'reset':
        this.speech.interruptAll();
        return this.turns!.reset();
    }
  }

  /** A `say` or `generate_reply` may queue one more reply (CLIENT_LIMITS.queued_replies); told to the client when not. */
  private replyFits(type: 'say' | 'generate_reply'): boolean {
    if (this.speech.activeCount < CLIENT_LIMITS.queued_replies) return true;
    this.refuseMessage(
      `${type}: at most ${CLIENT_LIMITS.queued_replies} replies may be queued or speaking at once; this one was dropped`,
      'queue_full',
    );
    return false;
  }

  private takeSystemToken(): boolean {
    const now = this.deps.timers.now();
    const burst = CLIENT_LIMITS.system_messages_burst;
    if (this.systemRefilledAtMs !== 0) {
      this.systemTokens = Math.min(
        burst,
        this.systemTokens + (now - this.systemRefilledAtMs) / CLIENT_LIMITS.system_message_interval_ms,
      );
    }
    this.systemRefilledAtMs = now;
    if (this.systemTokens < 1) return false;
    this.systemTokens -= 1;
    return true;
  }

  private refuseMessage(message: string, code: string): void {
    this.emit({ type: 'error', error: { message, code } });
  }

  /**
   * Whether a client's chunk of `length` bytes is taken (docs/sts-protocol.md, "Limits"): at most
   * CLIENT_LIMITS.chunk_ms of the input format, whole 16-bit samples, and within CLIENT_LIMITS.audio_ahead_ms of real
   * time. A refused chunk is dropped and told (a run of chunks dropped for running ahead, once). Per chunk: arithmetic
   * only.
   */
  private clientChunkFits(length: number): boolean {
    if (!isLive(this.state) || !this.inbound) return false;
    if (length > this.maxClientChunkBytes) {
      this.refuseMessage(
        `an audio chunk holds at most ${CLIENT_LIMITS.chunk_ms} ms: ${this.maxClientChunkBytes} bytes of ${this.settings!.inputFormat}; ${length} bytes dropped`,
        'invalid_audio',
      );
      return false;
    }
    if (this.pcmInput && (length & 1) !== 0) {
      this.refuseMessage(
        `${this.settings!.inputFormat} is 16-bit PCM: a chunk holds whole samples (an even number of bytes); ${length} bytes dropped`,
        'invalid_audio',
      );
      return false;
    }
    const now = this.deps.timers.now();
    const ahead = CLIENT_LIMITS.audio_ahead_ms;
    if (this.audioRefilledAtMs !== 0)
      this.audioCreditMs = Math.min(ahead, this.audioCreditMs + (now - this.audioRefilledAtMs));
    this.audioRefilledAtMs = now;
    const ms = this.msPerInputByte > 0 ? length * this.msPerInputByte : FRAME_MS;
    if (ms > this.audioCreditMs) {
      if (!this.audioRefusing) {
        this.audioRefusing = true;
        this.refuseMessage(
          `audio more than ${ahead} ms ahead of real time is dropped: send it as it is spoken`,
          'audio_ahead_of_real_time',
        );
      }
      return false;
    }
    this.audioCreditMs -= ms;
    this.audioRefusing = false;
    return true;
  }

  pushAudio(bytes: Uint8Array, offset = 0, length = bytes.length): void {
    if (this.beforeLive()) return void (this.early ??= new EarlyAudio()).push(bytes, offset, length);
    if (!this.acceptsAudio()) return;
    const max = this.maxChunkBytes;
    if (length <= max) return this.inbound!.pushPayload(bytes, length, offset);
    // A chunk larger than the chain's buffers (over 60 ms): fed in pieces of whole samples.
    for (let i = 0; i < length; i += max) this.inbound!.pushPayload(bytes, Math.min(max, length - i), offset + i);
  }

  pushLost(): void {
    if (this.beforeLive()) return void (this.early ??= new EarlyAudio()).push(null, 0, 0);
    if (!this.concealsLoss || !this.acceptsAudio()) return;
    this.inbound!.pushLost();
  }

  pushAudioFrame(data: ArrayBuffer): void {
    // Little-endian PCM on a little-endian host: a frame the chain takes whole goes on as a view of its own buffer
    // (a view is made either way), not copied into the decoder's array through a byte view. byteLength read once:
    // the getter is a builtin call in optimized code.
    const bytes = data.byteLength;
    if (this.beforeLive()) return this.clientAudioTooEarly();
    if (!this.clientChunkFits(bytes)) return;
    if (this.samplesInPlace && bytes <= this.maxChunkBytes) {
      if (this.acceptsAudio()) this.inbound!.pushSamples(new Int16Array(data, 0, bytes >> 1));
      return;
    }
    this.pushAudio(new Uint8Array(data));
  }

  /**
   * Still starting: a call's media flows from the answer on, while the conversation configures and opens its engine;
   * what the caller says meanwhile is kept (EarlyAudio), not dropped. (An STS client's audio before
   * ready_to_start_conversation never gets here: handle() and clientChunkFits() take it only once live.)
   */
  private beforeLive(): boolean {
    return this.state === 'created' || this.state === 'configuring';
  }

  /**
   * An STS client's audio before ready_to_start_conversation: its input format and limits are not settled yet (the
   * configuration endpoint may change them), so it is dropped, and the client told once (docs/sts-protocol.md).
   */
  private clientAudioTooEarly(): void {
    if (this.toldAudioTooEarly) return;
    this.toldAudioTooEarly = true;
    this.emit({
      type: 'warning',
      warning: {
        message: 'audio before ready_to_start_conversation is dropped: stream it from then on',
        code: 'audio_before_ready',
      },
    });
  }

  /**
   * The call's audio kept while starting, fed through the inbound chain once live (recorded, and to the VAD): a
   * caller speaking from the first packet loses nothing. Dropped when no turn may come of it (an outbound call's
   * audio during answering-machine detection is the callee's greeting, not a turn to answer).
   */
  private feedEarly(): void {
    const early = this.early;
    this.early = null;
    if (early === null) return;
    if (early.dropped > 0)
      this.deps.log.warn(
        { conversationId: this.id, dropped: early.dropped },
        'call audio before the conversation was live beyond what is kept: dropped',
      );
    early.replay(
      (bytes, offset, length) => this.pushAudio(bytes, offset, length),
      () => this.pushLost(),
    );
  }

  /** Whether input audio is taken now; the idle timeout starts over, and the first audio makes the conversation active. */
  private acceptsAudio(): boolean {
    if (!isLive(this.state) || !this.inbound) return false;
    this.silence.clientActive();
    // Live is ready or active, and 'activity' only moves ready to active (conversation.fsm.ts): once active, a
    // frame needs no transition lookup.
    if (this.state !== 'active') this.step('activity');
    return !this.turns!.isMuted;
  }

  pushDtmf(digits: string): void {
    if (digits.length === 0) return;
    if (!isLive(this.state)) {
      // Keys pressed while the conversation is set up (a call's keys can come before it is ready) are held: the
      // entry goes on once it is live, and is recorded if it ends first.
      if (this.state === 'created' || this.state === 'configuring') this.holdKeys(digits);
      return;
    }
    this.silence.clientActive();
    // A key is the user taking the turn: no poke or silence limit meanwhile, and interruptible speech stops.
    this.silence.userSpeaking();
    if (this.keys === '') {
      const speaking = this.speech.speaking();
      if (speaking?.interruptible && speaking.interrupt()) this.record.countInterruption();
    }
    this.holdKeys(digits);
    if (digits.includes(DTMF_ENTRY_END_KEY)) this.commitKeys(true);
    else this.keysEnd.start();
  }

  /** Adds keys to the entry under way (its first key starts it). */
  private holdKeys(digits: string): void {
    const now = this.deps.timers.now();
    if (this.keys === '') this.keysStartedAtMs = now;
    this.keys += digits;
    this.keysLastAtMs = now;
  }

  /** The conversation is live: keys held while it was set up are an entry under way, ended as any other. */
  private resumeKeys(): void {
    if (this.keys === '') return;
    this.silence.userSpeaking();
    if (this.keys.includes(DTMF_ENTRY_END_KEY)) this.commitKeys(true);
    else this.keysEnd.start();
  }

  /**
   * The keys of the entry under way become one user item (and a line of the transcript) and, when `answer` and the
   * conversation is not listen-only, user input the engine answers. Nothing when no key is pending.
   */
  private commitKeys(answer: boolean): void {
    this.keysEnd.cancel();
    const digits = this.keys;
    if (digits === '') return;
    this.keys = '';
    this.record.flushUserItem();
    this.record.holdUserItem({
      role: 'user',
      live_transcript: dtmfTranscript(digits),
      duration_ms: this.keysLastAtMs - this.keysStartedAtMs,
      started_at: new Date(this.keysStartedAtMs),
    });
    this.record.flushUserItem();
    const session = this.session;
    if (!answer || !session || !isLive(this.state)) return;
    if (this.settings!.listen_only_inbound_enabled) return this.silence.nobodySpeaking();
    this.speech.track(
      session.createResponse(`The caller pressed the keys ${digits} on the phone keypad.`),
      'reply',
      true,
    );
  }

  clientDropped(): void {
    if (this.clientLeftAtMs === null) this.clientLeftAtMs = this.deps.timers.now();
  }

  clientReturned(): void {
    this.clientLeftAtMs = null;
  }

  clientGone(): void {
    void this.end('user');
  }

  replaceClient(client: ConversationClient): void {
    this.client = client;
    this.clientLeftAtMs = null;
  }

  observe(observer: ConversationObserver): () => void {
    this.observers.add(observer);
    this.observerCount = this.observers.size;
    return () => {
      const removed = this.observers.delete(observer);
      this.observerCount = this.observers.size;
      return removed;
    };
  }

  // ---- user audio ----

  /** InboundSink: one frame of the user's audio at the engine rate (lent). */
  onAudio(frame: Int16Array): void {
    this.record.recordUser(frame);
    // Per frame: no iterator over an empty set (observers are the rare monitoring connections).
    if (this.observerCount !== 0) for (const o of this.observers) o.audio('user', frame, this.session!.sampleRate);
    this.turns!.frame(frame);
  }

  /** InboundSink: VAD events of the frame just delivered. */
  onVad(events: number): void {
    this.turns!.vad(events);
    // Listen-only: no reply re-arms the silence limit after a user turn, so its end does.
    if ((events & VAD_SPEECH_END) !== 0 && this.settings!.listen_only_inbound_enabled && !this.turns!.userSpeaking)
      this.silence.nobodySpeaking();
  }

  // ---- assistant speech ----

  private assistantStarted(u: Utterance, atMs: number): void {
    if (u.kind === 'reply') {
      const end = this.turns!.takeUnanswered();
      if (end) {
        const latencyMs = turnLatencyMs(end, atMs);
        this.record.addLatency(latencyMs);
        mediaMetrics.firstAudio.observe(latencyMs / 1000);
      }
    }
    this.step('activity');
  }

  private sendAssistantFrame(pcm: Int16Array, encoded: Uint8Array, text: string): boolean {
    if (!this.client.sendAudio(encoded, text)) return false;
    this.record.recordAssistant(pcm);
    if (this.observerCount !== 0) for (const o of this.observers) o.audio('assistant', pcm, this.session!.sampleRate);
    return true;
  }

  private assistantFinished(u: Utterance): void {
    if (this.toolHost.endsAfter(u)) return;
    // Ending: the silence timers stay cancelled.
    if (!isLive(this.state)) return;
    if (u.kind !== 'poke' && !this.turns!.userSpeaking && !this.speech.speaking()) this.silence.nobodySpeaking();
  }

  /** The item records the voice and speed `u` was heard with, not those in force now (a transfer may have changed them). */
  private writeAssistantItem(u: Utterance): void {
    const voice = { voice_id: u.voiceId, audio_speed: u.audioSpeed };
    this.record.appendAssistantItem(u, voice, this.session?.sampleRate ?? 16000, this.deps.timers.now());
  }

  private pokeUser(): void {
    const s = this.settings!;
    const session = this.session;
    // Listen-only speaks nothing after its message.
    if (!session || this.turns!.userSpeaking || s.listen_only_inbound_enabled) return;
    const id = s.generate_no_input_poke_text
      ? session.createResponse(
          'The user has not said anything for a while: check, briefly, whether they are still there.',
        )
      : session.speak(this.resolve(s.no_input_poke_text));
    this.speech.track(id, 'poke', true);
  }

  // ---- engine and tools ----

  private engineFailed(error: EngineError): void {
    this.deps.log.error({ err: error, conversationId: this.id }, 'engine failed');
    this.emit({ type: 'error', error: { message: `speech engine: ${error.message}`, code: 'engine_error' } });
    void this.end('error');
  }

  /**
   * Built-in transfer to a phone number: the call carries it out (its client's transferCall). Meanwhile no silence
   * timer counts; once the bridge connects the agent speaks no reply (it has left, or listens: keep_listening), and
   * post_transfer_message is spoken into the bridge. Transferred: the conversation ends (`assistant`); otherwise
   * the caller is back with the agent.
   */
  private async transferToPhoneNumber(request: PhoneTransferRequest): Promise<PhoneTransferResult | null> {
    const client = this.client;
    if (!client.transferCall || !isLive(this.state)) return null;
    const s = this.settings!;
    const listenOnly = s.listen_only_inbound_enabled;
    this.silence.suspend();
    let result: PhoneTransferResult;
    try {
      result = await client.transferCall(request, {
        connected: () => {
          s.listen_only_inbound_enabled = true;
          const session = this.session;
          if (request.postTransferMessage && session && isLive(this.state)) {
            this.speech.track(session.speak(this.resolve(request.postTransferMessage)), 'say', false);
          }
        },
      });
    } finally {
      s.listen_only_inbound_enabled = listenOnly;
    }
    if (result.outcome === 'transferred') void this.end('assistant');
    else if (isLive(this.state)) this.silence.resume();
    return result;
  }

  /**
   * Built-in transfer to agent (every field of the new agent that concerns a live conversation takes effect): the
   * agent's settings and tools replace the current ones in place (audio formats, template values and the engine
   * stay); the engine gets its prompt, tools, voice and speech settings; speed and background noise apply from the
   * next utterance. What still does not follow: see settings.ts.
   */
  private async transferToAgent(agentName: string): Promise<string | null> {
    const resolved = await this.deps.store.resolveAgent(this.who.orgId, this.projectName, agentName);
    if (!resolved) return `agent ${agentName} not found`;
    if (!resolved.agent.enabled) return `agent ${agentName} is disabled`;
    const next = applyConfig(baseSettings(resolved.config), {});
    // The new agent's vad_* to the running VAD first: the one part that can refuse (out of the VAD's ranges), and
    // then nothing has changed.
    try {
      this.turns?.setVadOptions(vadOptions(next));
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      this.deps.log.warn(
        { err, conversationId: this.id, agent: agentName },
        'transfer: the agent has VAD settings out of range',
      );
      return `agent ${agentName} has VAD settings out of range`;
    }
    const s = this.settings!;
    // What the conversation keeps: its audio formats and template values, and the engine it runs (and its model).
    Object.assign(s, {
      ...next,
      inputFormat: s.inputFormat,
      outputFormat: s.outputFormat,
      binaryAudio: s.binaryAudio,
      templateValues: s.templateValues,
      model: s.model,
      vendor_model: s.vendor_model,
      engineSettings: s.engineSettings,
    });
    if (s.data_retention_policy.zero_data_retention) this.record.keepNothing();
    const tools = this.liveTools(resolved.tools);
    this.tools.setTools(tools);
    this.agent = { id: resolved.agent.id, name: resolved.agent.name };
    this.speech.retune({ speed: s.audio_speed, noise: playoutNoise(s) });
    // The new agent's inactivity timers, counting from now (silence-timers.ts retime).
    this.silence.retime(s);
    const session = this.session;
    if (!session) return null;
    this.speech.voiceChangeAsked();
    session.updateSession({
      systemPrompt: this.resolve(s.system_prompt),
      tools: [...tools.values()].map(engineTool),
      voiceId: s.voice_id,
      defaultLanguage: s.default_language,
      additionalLanguages: s.additional_languages,
      boostedKeywords: s.boosted_keywords,
      pronunciations: s.pronunciation_dictionary,
    });
    // An engine that cannot change voice mid-session keeps the old one: the items record the voice the user hears.
    if (session.voiceId !== undefined && session.voiceId !== s.voice_id) {
      this.deps.log.warn(
        { conversationId: this.id, asked: s.voice_id, kept: session.voiceId },
        'transfer: the engine keeps its voice',
      );
      s.voice_id = session.voiceId;
    }
    return null;
  }

  /** The tools the settings name (built-ins by id, stored ones from `stored`) and the inline ones; what was left out is warned of. */
  private liveTools(stored: StoredTool[]): Map<string, LiveTool> {
    const s = this.settings!;
    const { tools, problems } = liveTools({
      names: s.tools,
      stored,
      inline: s.inlineTools,
      builtInConfigs: s.built_in_tool_configs,
      webSearch: (this.deps.webSearch ?? null) !== null,
    });
    for (const message of problems) {
      this.deps.log.warn({ conversationId: this.id }, message);
      this.emit({ type: 'warning', warning: { message, code: 'tool_unavailable' } });
    }
    return tools;
  }

  // ---- output, record ----

  /** PacedStream: the pacing clock's frame is due. */
  tick(): void {
    this.speech.tick();
    this.record.tick();
  }

  private emit(event: ServerEvent): void {
    this.client.send(event);
    for (const o of this.observers) o.event(event);
  }

  private resolve(text: string): string {
    const s = this.settings!;
    const values = {
      ...templateValues(s.template_variables, s.templateValues),
      ...systemVariables(new Date(this.startedAtMs || this.deps.timers.now()), s.timezone),
    };
    return substitute(text, values);
  }

  private async writeState(state: 'configuring' | 'ready' | 'active'): Promise<void> {
    const { updated } = await this.deps.store.updateConversation(this.id!, { state });
    if (!updated) await this.end('user_canceled');
  }

  private endpointContext(): Record<string, unknown> {
    return {
      conversation_id: this.id,
      agent: this.agent,
      project: { id: this.projectId, name: this.projectName },
      call_info: this.who.callInfo ?? null,
      template_variables: this.settings!.templateValues,
    };
  }
}

/** Input kept at most while a conversation starts: 10 s of 20 ms frames. */
const EARLY_MAX_FRAMES = 500;
/** Bytes kept at most: 10 s of G.711 (a call's opus packets are smaller at telephone bitrates). */
const EARLY_MAX_BYTES = 80_000;

/**
 * A call's input payloads (and lost frames) in arrival order while its conversation starts. One byte buffer and one
 * length table, allocated once when the first payload comes; beyond them, the newest are dropped and counted.
 */
class EarlyAudio {
  private readonly bytes = new Uint8Array(EARLY_MAX_BYTES);
  /** Per entry: its payload length, or -1 for a lost frame. */
  private readonly lengths = new Int32Array(EARLY_MAX_FRAMES);
  private count = 0;
  private used = 0;
  dropped = 0;

  /** A payload, or a lost frame (bytes null). */
  push(bytes: Uint8Array | null, offset: number, length: number): void {
    if (this.count === EARLY_MAX_FRAMES || this.used + length > EARLY_MAX_BYTES) {
      this.dropped++;
      return;
    }
    if (bytes === null) {
      this.lengths[this.count++] = -1;
      return;
    }
    this.bytes.set(bytes.subarray(offset, offset + length), this.used);
    this.used += length;
    this.lengths[this.count++] = length;
  }

  replay(audio: (bytes: Uint8Array, offset: number, length: number) => void, lost: () => void): void {
    let at = 0;
    for (let i = 0; i < this.count; i++) {
      const n = this.lengths[i];
      if (n < 0) {
        lost();
        continue;
      }
      audio(this.bytes, at, n);
      at += n;
    }
  }
}
