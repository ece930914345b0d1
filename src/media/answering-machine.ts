// Answering-machine detection for an answered call: fed the callee's audio from the answer on (8 kHz PCM, 20 ms
// frames), it decides whether a person or a machine picked up, and for a machine, when its beep comes.
//
// Features: the native VAD's speech segments (native/src/vad.h) and the native single-tone detector
// (native/src/tone.h: a steady 400-2000 Hz tone of 100 ms or more, the beep). The cadence rules:
// - a person answers with a short utterance ("Hello?") and then waits for the caller: speech followed by a silence
//   is a human's, the silence required growing with the speech before it (HUMAN_SILENCE_MS plus
//   SILENCE_PER_SPEECH of the speech's length), since a greeting's first sentence is longer than an answer and
//   pauses as long;
// - a recorded greeting talks on ("Hi, you've reached..."): speech running MACHINE_GREETING_MS from its first word
//   with no such silence is a machine's;
// - a beep after speech is a machine's (a greeting too short for the rule above);
// - nothing decided by ANALYSIS_DEADLINE_MS (silence, a tone alone, speech starting late) is unknown.
// Speech counts where its 20 ms frames stand MIN_SPEECH_ABOVE_NOISE_DB over the line's noise floor, and an answer
// needs MIN_ANSWER_MS of it: background talk, typing or a click is not an answer. A tone with no speech before it
// is neither speech nor a beep. After a machine decision the detector listens on for the beep and reports it when
// the tone ends, so the agent may start its message then.
//
// The VAD teaches itself the line's noise during its first 500 ms and finds no speech there, while a person often
// says hello within 500 ms of picking up. So the first WARM_UP_MS are held, the VAD is first taught on a primer
// made of the quietest part of them (the line's own noise), and then the held audio is analysed as if live.
import { TONE_END, TONE_START, ToneDetector } from './native/tone.js';
import { VAD_SPEECH_END, VAD_SPEECH_START, Vad } from './native/vad.js';

/** The rate the detector runs at: the telephone band, G.711's rate. */
export const ANSWERING_MACHINE_RATE_HZ = 8000;

/** ms of voiced speech an answer has at least ("yes"): shorter bursts before a silence are noise (a click, a cough), forgotten. */
export const MIN_ANSWER_MS = 200;
/** ms of silence that ends a person's answer, before the share for its length: people say hello and wait for the caller. */
export const HUMAN_SILENCE_MS = 200;
/** ms of silence required per ms of speech before it: a greeting's first sentence (1-2 s) pauses longer than "hello" is followed by. */
export const SILENCE_PER_SPEECH = 0.6;
/** ms of silence that ends any answer however long: a greeting's pauses between sentences are shorter. */
export const MAX_HUMAN_SILENCE_MS = 1000;
/** ms a greeting's speech runs (from its first word, pauses included) before it is a machine's: people's answers are shorter. */
export const MACHINE_GREETING_MS = 2300;
/** ms from the answer with no decision after which the answer is unknown: the caller cannot stay silent longer. */
export const ANALYSIS_DEADLINE_MS = 6000;
/** ms from the answer during which a machine's beep is awaited: greetings rarely run longer. */
export const BEEP_WAIT_MS = 30_000;
/** ms a beep may sound before it is reported without its end: machines beep for a second at most; a tone that goes on is not waited out. */
export const MAX_BEEP_MS = 2000;
/** ms of speech a tone must follow to be a beep: the tone detector dates a tone's start up to its 32 ms window early. */
export const SPEECH_BEFORE_BEEP_MS = 60;
/** dB above the line's noise floor a 20 ms frame of speech must reach to count: the callee speaks into the phone, background talk and typing are fainter. */
export const MIN_SPEECH_ABOVE_NOISE_DB = 10;
/** dBFS (RMS against full scale) below which the noise floor is not believed: G.711's idle-channel noise, so digital silence does not make every click speech. */
export const NOISE_FLOOR_MIN_DBFS = -75;
/** ms of voicing before a speech segment opens (the VAD's min speech): shorter bursts are clicks, not words. */
export const MIN_WORD_MS = 60;
/** ms of unvoiced time that closes a speech segment (the VAD's min silence): shorter gaps are inside a word. */
export const WORD_GAP_MS = 100;
/** The VAD's threshold (0..1, speech probability per 10 ms step): the agents' default. */
export const VAD_THRESHOLD = 0.38;
/** ms held at the answer: the VAD's noise-learning time (native/src/vad.h), which finds no speech. */
export const WARM_UP_MS = 500;
/** ms of the held audio, its quietest stretch, the VAD's primer is made of: several 20 ms frames, so the noise varies as it does. */
export const PRIMER_SOURCE_MS = 100;

export type AnsweringMachineResult = 'human' | 'machine' | 'unknown';

/** Which rule decided. */
export type AnsweringMachineReason = 'short_answer' | 'long_greeting' | 'beep_after_speech' | 'deadline' | 'beep';

export interface AnsweringMachineDecision {
  /** decision: the call's one decision; beep: a machine's beep, after the machine decision. */
  kind: 'decision' | 'beep';
  result: AnsweringMachineResult;
  reason: AnsweringMachineReason;
  /** ms from the answer (the first sample pushed) to the decision. */
  decidedAtMs: number;
  /** With kind beep: ms from the answer to the beep's start. */
  beepAtMs?: number;
  /** With kind beep: ms from the answer to the beep's end (or MAX_BEEP_MS into a tone that goes on). */
  beepEndMs?: number;
}

/** The rules' thresholds, in ms unless named otherwise (defaults: the constants above). */
export interface AnsweringMachineOptions {
  minAnswerMs: number;
  humanSilenceMs: number;
  silencePerSpeech: number;
  maxHumanSilenceMs: number;
  machineGreetingMs: number;
  analysisDeadlineMs: number;
  beepWaitMs: number;
  maxBeepMs: number;
}

export const ANSWERING_MACHINE_DEFAULTS: Readonly<AnsweringMachineOptions> = {
  minAnswerMs: MIN_ANSWER_MS,
  humanSilenceMs: HUMAN_SILENCE_MS,
  silencePerSpeech: SILENCE_PER_SPEECH,
  maxHumanSilenceMs: MAX_HUMAN_SILENCE_MS,
  machineGreetingMs: MACHINE_GREETING_MS,
  analysisDeadlineMs: ANALYSIS_DEADLINE_MS,
  beepWaitMs: BEEP_WAIT_MS,
  maxBeepMs: MAX_BEEP_MS,
};

/**
 * warming_up: holding the first WARM_UP_MS; listening: deciding; awaiting_beep: a machine, its beep not heard yet;
 * in_beep: its beep sounding; done: nothing more will be reported.
 */
type Phase = 'warming_up' | 'listening' | 'awaiting_beep' | 'in_beep' | 'done';

const SAMPLES_PER_MS = ANSWERING_MACHINE_RATE_HZ / 1000;
const FRAME_SAMPLES = 20 * SAMPLES_PER_MS;
const WARM_UP_SAMPLES = WARM_UP_MS * SAMPLES_PER_MS;
const PRIMER_SOURCE_SAMPLES = PRIMER_SOURCE_MS * SAMPLES_PER_MS;
/** Mean square of a sample at the noise floor's minimum. */
const NOISE_FLOOR_MIN_POWER = (32768 * 10 ** (NOISE_FLOOR_MIN_DBFS / 20)) ** 2;
const SPEECH_ABOVE_NOISE = 10 ** (MIN_SPEECH_ABOVE_NOISE_DB / 10);
/** Frames averaged into one noise-floor candidate: PRIMER_SOURCE_MS of 20 ms frames. */
const FLOOR_FRAMES = PRIMER_SOURCE_MS / 20;

/**
 * One answered call's detector. push() every frame of the callee's audio from the answer on, in order and without
 * gaps (a lost frame pushed as its concealment or as silence, so times stay true); it returns the decision when it
 * is made (once), then for a machine its beep (once), else null; `done` says nothing more will come. Times are ms
 * of audio pushed since the answer (or the last reset()). It allocates nothing per frame (an object for each of the
 * at most two events).
 */
export class AnsweringMachineDetector {
  private readonly o: AnsweringMachineOptions;
  private readonly vad: Vad;
  private readonly tone: ToneDetector;
  /** The first WARM_UP_MS of audio, its 20 ms frames (views made once), and the VAD's primer made from them. */
  private readonly held = new Int16Array(WARM_UP_SAMPLES);
  private readonly heldFrames: Int16Array[];
  private readonly primer = new Int16Array(WARM_UP_SAMPLES);

  private phase: Phase = 'warming_up';
  private decision: AnsweringMachineDecision | null = null;
  /** An event found while analysing the held audio behind another one: returned by the next push. */
  private pending: AnsweringMachineDecision | null = null;
  /** Samples pushed since the answer, and samples analysed (behind while the warm-up's audio is held). */
  private pushed = 0;
  private analysed = 0;
  /** Samples of the warm-up held so far. */
  private heldCount = 0;

  // The speech heard, in samples from the answer: the run of segments from its first word on.
  private runStart = -1;
  private lastVoiced = -1;
  /** Samples of the run's speech segments loud enough to be speech (MIN_SPEECH_ABOVE_NOISE_DB). */
  private runLoud = 0;
  private inSegment = false;
  private segmentStart = -1;
  /** The open segment has been loud enough to be speech (it counts in the run from its start). */
  private segmentCounted = false;
  /** The open segment is a tone's (a tone with no speech before it), not speech. */
  private segmentMasked = false;
  /** The line's noise floor (mean square): the quietest PRIMER_SOURCE_MS heard, from the last FLOOR_FRAMES frames' powers. */
  private noiseFloor = Infinity;
  private readonly recentPowers = new Float64Array(FLOOR_FRAMES);
  private recentCount = 0;
  /** A tone with no speech before it is sounding: segments that open meanwhile are the tone's. */
  private toneWithoutSpeech = false;
  private beepStart = -1;

  constructor(options: Partial<AnsweringMachineOptions> = {}) {
    this.o = { ...ANSWERING_MACHINE_DEFAULTS, ...options };
    this.vad = new Vad(ANSWERING_MACHINE_RATE_HZ, {
      threshold: VAD_THRESHOLD,
      prebufferMs: 0,
      minSpeechMs: MIN_WORD_MS,
      minSilenceMs: WORD_GAP_MS,
    });
    this.tone = new ToneDetector(ANSWERING_MACHINE_RATE_HZ);
    this.heldFrames = Array.from({ length: WARM_UP_SAMPLES / FRAME_SAMPLES }, (_, i) =>
      this.held.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES),
    );
  }

  /** True once nothing more will be reported: a human or unknown decision, a machine's beep, or its wait over. */
  get done(): boolean {
    return this.phase === 'done' && this.pending === null;
  }

  /** The decision, or null while none is made. */
  get result(): AnsweringMachineDecision | null {
    return this.decision;
  }

  /** Feeds the next frame of the callee's audio (8 kHz PCM, 20 ms or any length); returns an event or null. */
  push(frame: Int16Array): AnsweringMachineDecision | null {
    const pending = this.pending;
    if (pending !== null) {
      this.pending = null;
      this.pushed += frame.length;
      return pending;
    }
    if (this.phase === 'done') return null;
    this.pushed += frame.length;
    if (this.phase !== 'warming_up') return this.analyse(frame);
    const room = WARM_UP_SAMPLES - this.heldCount;
    if (frame.length < room) {
      this.held.set(frame, this.heldCount);
      this.heldCount += frame.length;
      return null;
    }
    this.held.set(frame.length === room ? frame : frame.subarray(0, room), this.heldCount);
    this.heldCount = WARM_UP_SAMPLES;
    this.primeVad();
    this.phase = 'listening';
    let event: AnsweringMachineDecision | null = null;
    for (const f of this.heldFrames) event = this.keep(event, this.analyse(f));
    if (frame.length > room) event = this.keep(event, this.analyse(frame.subarray(room)));
    return event;
  }

  /** Starts over for another answer (a transfer's leg): the VAD relearns the line's noise. */
  reset(): void {
    this.vad.reset();
    this.tone.reset();
    this.phase = 'warming_up';
    this.decision = this.pending = null;
    this.pushed = this.analysed = this.heldCount = 0;
    this.runStart = this.lastVoiced = this.segmentStart = this.beepStart = -1;
    this.runLoud = 0;
    this.inSegment = this.segmentCounted = this.segmentMasked = this.toneWithoutSpeech = false;
    this.noiseFloor = Infinity;
    this.recentCount = 0;
  }

  /** Frees the native detectors; the detector must not be used afterwards. */
  destroy(): void {
    this.vad.destroy();
    this.tone.destroy();
  }

  /** The first event is returned; a second one waits in `pending` for the next push. */
  private keep(
    first: AnsweringMachineDecision | null,
    next: AnsweringMachineDecision | null,
  ): AnsweringMachineDecision | null {
    if (first === null) return next;
    if (next !== null) this.pending = next;
    return first;
  }

  /**
   * Teaches the VAD the line's noise before it hears the held audio: WARM_UP_MS of the quietest PRIMER_SOURCE_MS
   * of it, tiled forwards and backwards alternately (no step at the seams). The VAD's positions then count from
   * the primer's start.
   */
  private primeVad(): void {
    const held = this.held;
    let best = 0;
    let bestEnergy = Infinity;
    for (let start = 0; start + PRIMER_SOURCE_SAMPLES <= WARM_UP_SAMPLES; start += FRAME_SAMPLES) {
      let e = 0;
      for (let i = start; i < start + PRIMER_SOURCE_SAMPLES; i++) e += held[i] * held[i];
      if (e < bestEnergy) {
        bestEnergy = e;
        best = start;
      }
    }
    for (let i = 0; i < WARM_UP_SAMPLES; i++) {
      const copy = Math.floor(i / PRIMER_SOURCE_SAMPLES);
      const k = i % PRIMER_SOURCE_SAMPLES;
      this.primer[i] = held[best + (copy % 2 === 0 ? k : PRIMER_SOURCE_SAMPLES - 1 - k)]!;
    }
    this.noiseFloor = Math.max(NOISE_FLOOR_MIN_POWER, bestEnergy / PRIMER_SOURCE_SAMPLES);
    this.vad.process(this.primer);
  }

  /** One chunk through both detectors and the phase's rules. */
  private analyse(frame: Int16Array): AnsweringMachineDecision | null {
    const speech = this.vad.process(frame);
    const tone = this.tone.process(frame);
    this.analysed += frame.length;
    const power = this.trackNoiseFloor(frame);
    // Both detectors: when a start and an end are reported together, the end came first.
    if (speech & VAD_SPEECH_END) this.segmentEnded();
    if (speech & VAD_SPEECH_START) this.segmentStarted();
    if (this.inSegment && !this.segmentMasked && power >= this.noiseFloor * SPEECH_ABOVE_NOISE) {
      this.runLoud += frame.length;
      if (!this.segmentCounted) {
        this.segmentCounted = true;
        if (this.runStart < 0) this.runStart = this.segmentStart;
      }
    }
    switch (this.phase) {
      case 'listening':
        return this.listen(tone);
      case 'awaiting_beep':
        if (tone & TONE_START) {
          this.beepStart = this.tone.startSample;
          this.phase = 'in_beep';
          return this.inBeep(TONE_START);
        }
        if (this.analysed >= this.o.beepWaitMs * SAMPLES_PER_MS) this.phase = 'done';
        return null;
      case 'in_beep':
        return this.inBeep(tone);
      default:
        return null;
    }
  }

  /** The frame's mean square; updates the noise floor with the mean of the last FLOOR_FRAMES frames. */
  private trackNoiseFloor(frame: Int16Array): number {
    let e = 0;
    for (let i = 0; i < frame.length; i++) e += frame[i] * frame[i];
    const power = frame.length > 0 ? e / frame.length : 0;
    this.recentPowers[this.recentCount % FLOOR_FRAMES] = power;
    if (++this.recentCount >= FLOOR_FRAMES) {
      let sum = 0;
      for (let i = 0; i < FLOOR_FRAMES; i++) sum += this.recentPowers[i];
      this.noiseFloor = Math.min(this.noiseFloor, Math.max(NOISE_FLOOR_MIN_POWER, sum / FLOOR_FRAMES));
    }
    return power;
  }

  private segmentStarted(): void {
    this.inSegment = true;
    this.segmentStart = this.vad.speechStartSample - WARM_UP_SAMPLES;
    this.segmentMasked = this.toneWithoutSpeech;
    this.segmentCounted = false;
  }

  private segmentEnded(): void {
    this.inSegment = false;
    if (this.segmentCounted && !this.segmentMasked) {
      this.lastVoiced = this.vad.lastVoicedSample - WARM_UP_SAMPLES;
    }
    this.segmentCounted = this.segmentMasked = false;
  }

  private forgetRun(): void {
    this.runStart = this.lastVoiced = -1;
    this.runLoud = 0;
  }

  private listen(tone: number): AnsweringMachineDecision | null {
    if (tone & TONE_END) this.toneWithoutSpeech = false;
    if (tone & TONE_START) {
      const start = this.tone.startSample;
      if (this.runStart >= 0 && this.runStart < start - SPEECH_BEFORE_BEEP_MS * SAMPLES_PER_MS) {
        this.beepStart = start;
        this.phase = 'in_beep';
        return this.decide('machine', 'beep_after_speech');
      }
      // A tone with no greeting before it (a fax, an information tone, a line that only beeps) is not speech: the
      // VAD's segment over it is dropped, and speech is looked for after it.
      this.toneWithoutSpeech = true;
      this.segmentMasked = this.inSegment;
      this.segmentCounted = false;
      this.forgetRun();
    }
    if (this.runStart >= 0) {
      const speaking = this.inSegment && this.segmentCounted;
      const run = (speaking ? this.analysed : this.lastVoiced) - this.runStart;
      if (run >= this.o.machineGreetingMs * SAMPLES_PER_MS) {
        this.phase = 'awaiting_beep';
        return this.decide('machine', 'long_greeting');
      }
      const silenceMs = Math.min(
        this.o.maxHumanSilenceMs,
        this.o.humanSilenceMs + (this.o.silencePerSpeech * run) / SAMPLES_PER_MS,
      );
      if (!speaking && this.lastVoiced >= 0 && this.analysed - this.lastVoiced >= silenceMs * SAMPLES_PER_MS) {
        if (this.runLoud >= this.o.minAnswerMs * SAMPLES_PER_MS) {
          this.phase = 'done';
          return this.decide('human', 'short_answer');
        }
        this.forgetRun();
      }
    }
    if (this.analysed >= this.o.analysisDeadlineMs * SAMPLES_PER_MS) {
      this.phase = 'done';
      return this.decide('unknown', 'deadline');
    }
    return null;
  }

  private inBeep(tone: number): AnsweringMachineDecision | null {
    const ended = (tone & TONE_END) !== 0;
    if (!ended && this.analysed - this.beepStart < this.o.maxBeepMs * SAMPLES_PER_MS) return null;
    this.phase = 'done';
    return {
      kind: 'beep',
      result: 'machine',
      reason: 'beep',
      decidedAtMs: this.decision!.decidedAtMs,
      beepAtMs: this.beepStart / SAMPLES_PER_MS,
      beepEndMs: (ended ? this.tone.endSample : this.analysed) / SAMPLES_PER_MS,
    };
  }

  /** The decision, timed when the caller gets it (after the warm-up's hold, however early the audio decided). */
  private decide(result: AnsweringMachineResult, reason: AnsweringMachineReason): AnsweringMachineDecision {
    this.decision = { kind: 'decision', result, reason, decidedAtMs: this.pushed / SAMPLES_PER_MS };
    return this.decision;
  }
}
