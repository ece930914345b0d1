// From characters to time: which stretch of the recording a redacted span was said in, for the bleep. Word timings
// (the post-call transcript's, seconds from the start of the recording) are aligned to the item's text in order; a
// span covers the words it overlaps. Without word timings, or when the words cannot be aligned, the whole turn is
// bleeped.

/** One word of a post-call transcript: its text and when it was said, in seconds from the recording's start. */
export interface WordTiming {
  text: string;
  start: number;
  end: number;
}

/** The channel a turn is on: the recording's left is the user, its right the assistant (src/media/recording.ts). */
export type RecordingSide = 'user' | 'assistant' | 'both';

/** A stretch of the recording to bleep, in milliseconds from its start. */
export interface AudioSpan {
  side: RecordingSide;
  startMs: number;
  endMs: number;
}

/** Margin around a word's timing, since word boundaries from speech recognition are approximate. */
export const WORD_PAD_MS = 60;
/** Margin around a whole turn, since its place in the recording is known only to about this. */
export const TURN_PAD_MS = 250;

const normalize = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}@.+]/gu, '');

/** Character ranges of each word in `text`, in order; null for a word that is not found after the previous one. */
export function alignWords(text: string, words: WordTiming[]): ([number, number] | null)[] {
  const lower = text.toLowerCase();
  let cursor = 0;
  return words.map((w) => {
    const needle = normalize(w.text);
    if (needle === '') return null;
    // The word as written, or its letters and digits alone ("five," in the text, "five" in the timing).
    let at = lower.indexOf(w.text.toLowerCase().trim(), cursor);
    let len = w.text.trim().length;
    if (at < 0) {
      at = lower.indexOf(needle, cursor);
      len = needle.length;
    }
    if (at < 0) return null;
    cursor = at + len;
    return [at, at + len];
  });
}

/** The audio spans of character spans of one turn's text. */
export function audioSpans(
  text: string,
  spans: { start: number; end: number }[],
  turn: { side: RecordingSide; startMs: number; durationMs: number; words?: WordTiming[] | null },
): AudioSpan[] {
  const whole = (): AudioSpan => ({
    side: turn.side,
    startMs: Math.max(0, turn.startMs - TURN_PAD_MS),
    endMs: turn.startMs + turn.durationMs + TURN_PAD_MS,
  });
  if (spans.length === 0) return [];
  if (!turn.words || turn.words.length === 0) return [whole()];
  const ranges = alignWords(text, turn.words);
  const out: AudioSpan[] = [];
  for (const s of spans) {
    let start = Infinity;
    let end = -Infinity;
    ranges.forEach((r, i) => {
      if (r && r[0] < s.end && s.start < r[1]) {
        start = Math.min(start, turn.words![i].start);
        end = Math.max(end, turn.words![i].end);
      }
    });
    // A span no aligned word covers: the words differ from the text, so the whole turn is bleeped.
    if (!Number.isFinite(start)) return [whole()];
    out.push({ side: turn.side, startMs: Math.max(0, start * 1000 - WORD_PAD_MS), endMs: end * 1000 + WORD_PAD_MS });
  }
  return out;
}
