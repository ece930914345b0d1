// Redacted spans of a text: what was found where, how overlaps resolve, and the text with each span replaced by its
// tag (`[PHONE]`).

/** What redaction tags. PII and PHI a transcript of a call can hold. */
export const REDACTION_TAGS = [
  'PHONE',
  'EMAIL',
  'SSN',
  'CREDIT_CARD',
  'DATE_OF_BIRTH',
  'ADDRESS',
  'NAME',
  'IBAN',
  'IP_ADDRESS',
  'ACCOUNT_NUMBER',
] as const;
export type RedactionTag = (typeof REDACTION_TAGS)[number];

/** A found span: characters [start, end) of the text. */
export interface Span {
  start: number;
  end: number;
  tag: RedactionTag;
  /** Who found it: the offline rules or the chat model. */
  source: 'rules' | 'model';
}

/** Which tag wins between two spans of the same length over the same characters (the more specific first). */
const PRIORITY: Record<RedactionTag, number> = {
  EMAIL: 0,
  IBAN: 1,
  CREDIT_CARD: 2,
  SSN: 3,
  PHONE: 4,
  IP_ADDRESS: 5,
  DATE_OF_BIRTH: 6,
  ACCOUNT_NUMBER: 7,
  ADDRESS: 8,
  NAME: 9,
};

/** Non-overlapping spans in text order: of two overlapping spans the longer stays (the more specific on a tie). */
export function resolveOverlaps(spans: Span[]): Span[] {
  const ranked = [...spans].sort(
    (a, b) => b.end - b.start - (a.end - a.start) || PRIORITY[a.tag] - PRIORITY[b.tag] || a.start - b.start,
  );
  const kept: Span[] = [];
  for (const s of ranked) {
    if (s.end <= s.start) continue;
    if (kept.some((k) => s.start < k.end && k.start < s.end)) continue;
    kept.push(s);
  }
  return kept.sort((a, b) => a.start - b.start);
}

/** The text with each span (non-overlapping, in order) replaced by `[TAG]`. */
export function applySpans(text: string, spans: Span[]): string {
  let out = '';
  let at = 0;
  for (const s of spans) {
    out += text.slice(at, s.start) + `[${s.tag}]`;
    at = s.end;
  }
  return out + text.slice(at);
}
