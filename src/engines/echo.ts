// The `echo` engine (docs/ARCHITECTURE.md, "Speech engines"): offline, the embedded default. Speaks welcome, poke and
// say text with the local text-to-speech (espeak-ng, or tones without it) and answers each user turn by playing that
// turn's audio back. It has no speech-to-text: each turn's transcript is reported empty (unknown).
import type { Logger } from '../log.js';
import type { ResamplerRate } from '../media/native/resampler.js';
import {
  EngineError,
  speechSettingsOf,
  updatedSpeech,
  type EngineHooks,
  type EngineSessionOptions,
  type ResponseId,
  type SessionUpdate,
  type SpeechEngine,
  type SpeechEngineSession,
  type SpeechSettings,
} from './engine.js';
import { audioBlockPool, type AudioBlockPool } from '../media/audio-block-pool.js';
import type { LocalTts } from './local-tts.js';
import { Playback } from './playback.js';

export const ECHO_ENGINE = 'echo';
/** The session rate: wideband speech, what the native VAD and resampler handle best. */
export const ECHO_SAMPLE_RATE: ResamplerRate = 16_000;
/**
 * A narrowband client (8 kHz) gets a session at its own rate: echo plays the user back, so a higher rate adds
 * nothing but an upsampling of every inbound frame and a VAD over twice the samples.
 */
export const ECHO_NARROWBAND_RATE: ResamplerRate = 8_000;
/** What createResponse says without a model to generate anything (and after a tool output asking for a reply). */
export const ECHO_ACKNOWLEDGEMENT = 'Okay.';
/** Longest user turn kept for playback: 60 s; older audio of a longer turn is dropped. */
export const ECHO_MAX_TURN_SEC = 60;
/**
 * User audio is kept in blocks of 1 s from the worker's pool of its rate (src/media/audio-block-pool.ts), given
 * back once played, cleared or dropped, and at close: no allocation per frame, and none per turn once the pool has
 * reached the worker's concurrent need.
 */
const BLOCK_SEC = 1;

export interface EchoEngineOptions {
  tts: LocalTts;
  /** The espeak-ng voice of a catalog voice id. */
  voiceFor(voiceId: string): string;
  log: Logger;
  /** A fixed session rate; by default ECHO_SAMPLE_RATE, or the client's own rate when it is narrowband. */
  sampleRate?: ResamplerRate;
}

/** The rate of an echo session: the configured one, else the client's when narrowband, else wideband. */
export function echoSampleRate(
  configured: ResamplerRate | undefined,
  clientSampleRate: number | undefined,
): ResamplerRate {
  if (configured !== undefined) return configured;
  return clientSampleRate === ECHO_NARROWBAND_RATE ? ECHO_NARROWBAND_RATE : ECHO_SAMPLE_RATE;
}

export function createEchoEngine(options: EchoEngineOptions): SpeechEngine {
  return {
    name: ECHO_ENGINE,
    async open(session, hooks) {
      if (session.signal.aborted) throw new EngineError('conversation ended while the engine opened', ECHO_ENGINE);
      return new EchoSession(options, session, hooks);
    },
  };
}

/** Applies the pronunciation dictionary: each listed word is spoken as its pronunciation. */
export function applyPronunciations(text: string, pronunciations: EngineSessionOptions['pronunciations']): string {
  let out = text;
  for (const { word, pronunciation } of pronunciations) {
    const escaped = word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    out = out.replace(new RegExp(`\\b${escaped}\\b`, 'gi'), pronunciation);
  }
  return out;
}

class EchoSession implements SpeechEngineSession {
  readonly sampleRate: ResamplerRate;
  readonly transcribesLive = false;
  private readonly playback: Playback;
  private readonly maxTurnSamples: number;
  private readonly blockSamples: number;
  /** Where the turn's blocks come from and go back to: each block is this session's from take to give. */
  private readonly pool: AudioBlockPool;
  /** The open turn: full blocks, and the block being filled (`fill` samples of it). */
  private turn: Int16Array[] = [];
  /** The turn's last block (null while the turn is empty): a frame is appended without loading the turn's array. */
  private block: Int16Array | null = null;
  private fill = 0;
  private readonly onFail = (err: unknown): void => this.fail(err);
  /** Voice and pronunciations of what it says; a transfer to another agent replaces them (updateSession). */
  private speech: SpeechSettings;
  private closed = false;

  constructor(
    private readonly options: EchoEngineOptions,
    private readonly session: EngineSessionOptions,
    private readonly hooks: EngineHooks,
  ) {
    this.sampleRate = echoSampleRate(options.sampleRate, session.clientSampleRate);
    this.maxTurnSamples = this.sampleRate * ECHO_MAX_TURN_SEC;
    this.blockSamples = this.sampleRate * BLOCK_SEC;
    this.pool = audioBlockPool(this.blockSamples);
    this.playback = new Playback('echo', this.sampleRate, hooks);
    this.speech = speechSettingsOf(session);
  }

  get voiceId(): string {
    return this.speech.voiceId;
  }

  appendAudio(pcm: Int16Array): void {
    if (this.closed) return;
    // pcm is lent: copied into the turn's blocks.
    let block = this.block;
    for (let at = 0; at < pcm.length;) {
      if (block === null || this.fill === this.blockSamples) {
        if ((this.turn.length + 1) * this.blockSamples > this.maxTurnSamples) this.pool.give(this.turn.shift()!);
        block = this.pool.take();
        this.turn.push(block);
        this.block = block;
        this.fill = 0;
      }
      const n = Math.min(pcm.length - at, this.blockSamples - this.fill);
      // The whole frame when it fits (the usual case): no view to allocate.
      block.set(n === pcm.length ? pcm : pcm.subarray(at, at + n), this.fill);
      this.fill += n;
      at += n;
    }
  }

  commitUserTurn(respond = true): void {
    if (this.closed) return;
    if (!respond) {
      // No speech-to-text: the turn's transcript is unknown, and nothing is played back.
      this.clearUserTurn();
      this.hooks.onInputTranscript('', true);
      return;
    }
    const blocks = this.turn;
    const lastFill = this.fill;
    this.turn = [];
    this.block = null;
    this.fill = 0;
    this.hooks.onInputTranscript('', true);
    if (blocks.length === 0) return;
    const id = this.playback.newId();
    // The blocks are the playback's until it has played or stopped (also after close: Playback still finishes
    // every queued response, stopped, and calls this back); only then do they go back to the pool.
    this.playback.play(
      id,
      async () =>
        blocks.map((block, i) => ({
          kind: 'audio' as const,
          pcm: i === blocks.length - 1 ? block.subarray(0, lastFill) : block,
        })),
      this.onFail,
      true,
      () => {
        for (let i = 0; i < blocks.length; i++) this.pool.give(blocks[i]);
      },
    );
  }

  clearUserTurn(): void {
    for (let i = 0; i < this.turn.length; i++) this.pool.give(this.turn[i]);
    this.turn = [];
    this.block = null;
    this.fill = 0;
  }

  /** Echo has no model and calls no tool: every response it makes is speech only (ResponseOptions holds as is). */
  createResponse(): ResponseId {
    return this.speak(ECHO_ACKNOWLEDGEMENT);
  }

  speak(text: string): ResponseId {
    const id = this.playback.newId();
    if (this.closed) return id;
    // The voice of the moment the response starts: a later update does not change it halfway.
    const voice = this.options.voiceFor(this.speech.voiceId);
    const spoken = applyPronunciations(text, this.speech.pronunciations);
    this.playback.play(
      id,
      async () => [
        { kind: 'text', text },
        { kind: 'audio', pcm: await this.options.tts.synthesize(spoken, voice, this.sampleRate) },
      ],
      this.onFail,
    );
    return id;
  }

  submitToolOutput(_callId: string, _output: string, respond: boolean): void {
    if (respond) this.speak(ECHO_ACKNOWLEDGEMENT);
  }

  cancelResponse(responseId: ResponseId): void {
    this.playback.cancel(responseId);
  }

  updateSession(update: SessionUpdate): void {
    // Echo has no model: prompt, tools and system messages change nothing it does; voice and pronunciations do.
    this.speech = updatedSpeech(this.speech, update);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.playback.close();
    this.clearUserTurn();
  }

  private fail(err: unknown): void {
    if (this.closed) return;
    this.options.log.warn({ err, conversationId: this.session.conversationId }, 'echo engine failed');
    this.hooks.onError(
      err instanceof EngineError
        ? err
        : new EngineError(`speech synthesis failed: ${(err as Error).message}`, ECHO_ENGINE, { cause: err }),
    );
  }
}
