// Redaction of a conversation's turns: the offline rules on every turn, the chat model for names and addresses when
// one is configured, overlaps resolved, each span replaced by its tag; and where each span was said, for the bleep.
import type { ChatClient } from '../../engines/chat-client.js';
import { modelSpans } from './model.js';
import { ruleSpans, type RuleOptions } from './rules.js';
import { applySpans, resolveOverlaps, type Span } from './spans.js';
import { audioSpans, type AudioSpan, type WordTiming } from './timing.js';

/** A turn to redact. Times are in milliseconds from the start of the recording. */
export interface TurnInput {
  role: 'user' | 'assistant';
  text: string | null;
  startMs: number;
  durationMs: number;
  words?: WordTiming[] | null;
}

export interface RedactedTurn {
  /** The text with each span replaced by its tag; null when the turn had no text. */
  redacted: string | null;
  spans: Span[];
  audio: AudioSpan[];
}

/** Whether the chat model took part: `used`, or why not. */
export type ModelUse =
  { status: 'used'; notFound: number } | { status: 'skipped'; reason: string } | { status: 'failed'; reason: string };

export const NO_MODEL_REASON =
  'model-assisted redaction skipped: no chat model configured (PARLEY_LLM_BASE_URL, PARLEY_LLM_MODEL)';

/** The redacted text and its spans (offline rules only): what the benchmark measures. */
export function redactText(text: string, opts: RuleOptions = {}): { redacted: string; spans: Span[] } {
  const spans = resolveOverlaps(ruleSpans(text, opts));
  return { redacted: applySpans(text, spans), spans };
}

/**
 * Redacts the turns. The model's failure to answer at all (ChatUpstreamUnavailableError) is thrown, so the job is
 * retried; an answer that is not usable is reported in `model` and the rules' result stands.
 */
export async function redactTurns(
  turns: TurnInput[],
  opts: RuleOptions & { chat: ChatClient | null; signal?: AbortSignal },
): Promise<{ turns: RedactedTurn[]; model: ModelUse }> {
  const found = turns.map((t) => (t.text ? ruleSpans(t.text, opts) : []));
  let model: ModelUse = { status: 'skipped', reason: NO_MODEL_REASON };
  if (opts.chat) {
    try {
      const r = await modelSpans(
        opts.chat,
        turns.map((t) => t.text),
        opts.signal,
      );
      r.spans.forEach((s, i) => found[i].push(...s));
      model = { status: 'used', notFound: r.notFound };
    } catch (err) {
      if ((err as Error).name !== 'ModelAnswerError' && (err as Error).name !== 'ChatUpstreamInvalidError') throw err;
      model = { status: 'failed', reason: (err as Error).message };
    }
  }
  return {
    model,
    turns: turns.map((t, i) => {
      if (!t.text) return { redacted: null, spans: [], audio: [] };
      const spans = resolveOverlaps(found[i]);
      return {
        redacted: applySpans(t.text, spans),
        spans,
        audio: audioSpans(t.text, spans, {
          side: t.role,
          startMs: t.startMs,
          durationMs: t.durationMs,
          words: t.words,
        }),
      };
    }),
  };
}
