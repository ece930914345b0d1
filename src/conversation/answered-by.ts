// Who answered a call leg, as answering-machine detection decides it (src/telephony/voicemail-detection.ts): the
// outcome a conversation waits on and a transfer's record keeps. Types only.

/**
 * Who answered an outbound call (answering-machine detection, src/telephony/voicemail-detection.ts), stored as the
 * record's `metadata.answering_machine`. Times are ms of the callee's audio from the answer; null where unknown.
 */
export interface AnsweredBy {
  result: 'human' | 'machine' | 'unknown';
  /** The rule that decided (`short_answer`, `long_greeting`, `beep_after_speech`, `beep`, `deadline`, `no_audio`, `cancelled`). */
  reason: string;
  decided_at_ms: number | null;
  /** A machine's beep: its start and end; null when none was heard. */
  beep_at_ms: number | null;
  beep_end_ms: number | null;
}
