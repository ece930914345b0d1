// Answering-machine detection of one answered call leg (docs/telephony.md, "Answering-machine detection"): the
// leg's decoded audio (8 kHz PCM, from the answer on) through the detector of src/media/answering-machine.ts, and
// one promise of the outcome. `human` and `unknown` settle as soon as they are decided; `machine` settles when the
// machine's beep has ended (so whoever waits on it may speak into the recording at once), or, with no beep heard,
// when the detector stops waiting for one. A leg whose audio stops coming settles on its own: a wall-clock bound
// per phase (no audio is still an answer: unknown).
import {
  ANSWERING_MACHINE_DEFAULTS,
  ANSWERING_MACHINE_RATE_HZ,
  AnsweringMachineDetector,
  type AnsweringMachineDecision,
  type AnsweringMachineOptions,
} from '../media/answering-machine.js';
import type { AnsweredBy } from '../conversation/host.js';

export type { AnsweredBy } from '../conversation/host.js';

/** 20 ms at the detector's rate: what a lost frame is pushed as (silence keeps the detector's times true). */
const LOST_FRAME_SAMPLES = (ANSWERING_MACHINE_RATE_HZ / 1000) * 20;
/** ms of wall time allowed past a phase's audio-time bound before the outcome is settled without the audio. */
export const VOICEMAIL_WALL_SLACK_MS = 2000;

export interface VoicemailTimers {
  set(fn: () => void, delayMs: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: VoicemailTimers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface VoicemailDetectionOptions {
  /** The detector's thresholds (ANSWERING_MACHINE_DEFAULTS by default). */
  detector?: Partial<AnsweringMachineOptions>;
  timers?: VoicemailTimers;
}

/**
 * One leg's detection. push() each decoded frame of the far end's audio in order (pushLost() for a frame lost on the
 * way); `result` settles once. cancel() settles it as it stands (a machine decided: `machine` without a beep; else
 * `unknown`, reason `cancelled`) and frees the native detectors; they are also freed once it settles. Pushes after
 * that are ignored (`settled` says so).
 */
export class VoicemailDetection {
  readonly result: Promise<AnsweredBy>;
  #resolve!: (outcome: AnsweredBy) => void;
  #detector: AnsweringMachineDetector | null;
  readonly #o: AnsweringMachineOptions;
  readonly #timers: VoicemailTimers;
  #timer: unknown = null;
  #decision: AnsweringMachineDecision | null = null;
  readonly #silence = new Int16Array(LOST_FRAME_SAMPLES);

  constructor(opts: VoicemailDetectionOptions = {}) {
    this.#o = { ...ANSWERING_MACHINE_DEFAULTS, ...opts.detector };
    this.#timers = opts.timers ?? realTimers;
    this.#detector = new AnsweringMachineDetector(this.#o);
    this.result = new Promise((resolve) => (this.#resolve = resolve));
    this.#arm(this.#o.analysisDeadlineMs);
  }

  /** True once the outcome is known (or the detection cancelled): nothing more needs pushing. */
  get settled(): boolean {
    return this.#detector === null;
  }

  /** The next frame of the leg's audio: 8 kHz 16-bit PCM (any length; 20 ms frames as they arrive). */
  push(pcm: Int16Array): void {
    const detector = this.#detector;
    if (detector === null) return;
    const event = detector.push(pcm);
    if (event !== null) this.#event(event);
    else if (detector.done) this.#settleFromDetector();
  }

  /** One 20 ms frame lost on the way: pushed as silence. */
  pushLost(): void {
    this.push(this.#silence);
  }

  /** Stops (the leg ended): settles as it stands unless already settled; frees the detector. */
  cancel(): void {
    const d = this.#decision;
    this.#settle(
      d
        ? outcomeOf(d, null)
        : { result: 'unknown', reason: 'cancelled', decided_at_ms: null, beep_at_ms: null, beep_end_ms: null },
    );
  }

  #event(event: AnsweringMachineDecision): void {
    if (event.kind === 'decision') {
      this.#decision = event;
      if (event.result !== 'machine') return this.#settle(outcomeOf(event, null));
      // A machine: its beep is awaited (BEEP_WAIT_MS of audio from the answer), bounded in wall time too.
      this.#arm(Math.max(0, this.#o.beepWaitMs - event.decidedAtMs));
      if (this.#detector?.done) this.#settleFromDetector();
      return;
    }
    this.#settle(outcomeOf(this.#decision ?? event, event));
  }

  /** The detector has nothing more to say: a machine whose beep never came. */
  #settleFromDetector(): void {
    const d = this.#decision;
    this.#settle(
      d
        ? outcomeOf(d, null)
        : { result: 'unknown', reason: 'deadline', decided_at_ms: null, beep_at_ms: null, beep_end_ms: null },
    );
  }

  /** The wall-clock bound of the phase: `ms` of audio time plus VOICEMAIL_WALL_SLACK_MS. */
  #arm(ms: number): void {
    if (this.#timer !== null) this.#timers.clear(this.#timer);
    this.#timer = this.#timers.set(() => {
      this.#timer = null;
      const d = this.#decision;
      // No audio to decide on (the far end sends none): unknown; a machine whose beep did not come in time: machine.
      this.#settle(
        d
          ? outcomeOf(d, null)
          : { result: 'unknown', reason: 'no_audio', decided_at_ms: null, beep_at_ms: null, beep_end_ms: null },
      );
    }, ms + VOICEMAIL_WALL_SLACK_MS);
  }

  #settle(outcome: AnsweredBy): void {
    const detector = this.#detector;
    if (detector === null) return;
    this.#detector = null;
    if (this.#timer !== null) this.#timers.clear(this.#timer);
    this.#timer = null;
    detector.destroy();
    this.#resolve(outcome);
  }
}

function outcomeOf(decision: AnsweringMachineDecision, beep: AnsweringMachineDecision | null): AnsweredBy {
  return {
    result: decision.result,
    reason: beep ? 'beep' : decision.reason,
    decided_at_ms: decision.decidedAtMs,
    beep_at_ms: beep?.beepAtMs ?? null,
    beep_end_ms: beep?.beepEndMs ?? null,
  };
}

/**
 * The entry point for a leg whose audio comes as an async sequence of decoded 8 kHz frames (a bridged transfer's
 * leg): resolves with the outcome as soon as it is known; the sequence ending first settles it as it stands
 * (`unknown`, or `machine` without a beep). Stops reading the frames once settled. Rejects with the sequence's own
 * error when it fails before an outcome.
 */
export function detectVoicemail(
  frames: AsyncIterable<Int16Array>,
  opts: VoicemailDetectionOptions = {},
): Promise<AnsweredBy> {
  const detection = new VoicemailDetection(opts);
  return new Promise<AnsweredBy>((resolve, reject) => {
    void detection.result.then(resolve);
    (async () => {
      for await (const frame of frames) {
        detection.push(frame);
        if (detection.settled) break;
      }
      detection.cancel();
    })().catch((err: unknown) => {
      reject(err);
      detection.cancel();
    });
  });
}
