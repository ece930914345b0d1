// analysis.latencies_ms (docs/ARCHITECTURE.md, "Media pipeline"): per answered turn, from the end of the user's
// speech (the last voiced frame, before the silence hangover) to the first assistant audio frame sent. Pure
// functions.

export interface TurnEnd {
  /** Clock time (ms) when the VAD reported the end of speech. */
  reportedAtMs: number;
  /** Samples fed to the VAD when it reported the end. */
  samplesFed: number;
  /** The VAD's index of the sample just after the last voiced step. */
  lastVoicedSample: number;
  sampleRate: number;
}

/** Clock time (ms) of the end of the last voiced frame: the report time minus the hangover fed since. */
export function speechEndedAtMs(end: TurnEnd): number {
  const hangover = Math.max(0, end.samplesFed - end.lastVoicedSample);
  return end.reportedAtMs - (hangover * 1000) / end.sampleRate;
}

/** The turn's latency: end of speech to the first assistant frame sent; never negative. */
export function turnLatencyMs(end: TurnEnd, firstAudioSentAtMs: number): number {
  return Math.max(0, firstAudioSentAtMs - speechEndedAtMs(end));
}
