// Numbers as a transcript of speech writes them: digits ("555-123-4567"), spoken digits ("five five five, one two
// three four"), "oh" for zero, "double five", tens and teens ("twenty three", "fifteen"), and mixes of them. A run
// is a sequence of such tokens joined by spaces, dashes, parentheses, dots between digits, or commas when one side
// is spoken ("five five five, one two three"); its digits are what the detectors judge.

const UNITS: Record<string, string> = {
  zero: '0',
  oh: '0',
  one: '1',
  two: '2',
  three: '3',
  four: '4',
  five: '5',
  six: '6',
  seven: '7',
  eight: '8',
  nine: '9',
};
const TEENS: Record<string, string> = {
  ten: '10',
  eleven: '11',
  twelve: '12',
  thirteen: '13',
  fourteen: '14',
  fifteen: '15',
  sixteen: '16',
  seventeen: '17',
  eighteen: '18',
  nineteen: '19',
};
const TENS: Record<string, string> = {
  twenty: '2',
  thirty: '3',
  forty: '4',
  fifty: '5',
  sixty: '6',
  seventy: '7',
  eighty: '8',
  ninety: '9',
};
const REPEAT: Record<string, number> = { double: 2, triple: 3 };

/** Spoken number words (for the detectors' patterns). */
export const NUMBER_WORDS = [...Object.keys(UNITS), ...Object.keys(TEENS), ...Object.keys(TENS), 'hundred', 'thousand'];

/** One number said or written: a token, or two ("twenty three", "double five"). */
export interface NumberPart {
  start: number;
  end: number;
  digits: string;
  spoken: boolean;
}

export interface NumberRun {
  start: number;
  end: number;
  /** The digits said or written, in order (`+` first when the run starts with "plus" or "+"). */
  digits: string;
  /** Whether any of it was spoken (words rather than digits). */
  spoken: boolean;
  parts: NumberPart[];
}

interface Token {
  start: number;
  end: number;
  word: string;
}

const TOKEN = /[A-Za-z]+|\d+|\+/g;

function tokens(text: string): Token[] {
  const out: Token[] = [];
  for (const m of text.matchAll(TOKEN))
    out.push({ start: m.index, end: m.index + m[0].length, word: m[0].toLowerCase() });
  return out;
}

/** Whether the characters between two numbers join them into one run. */
function joins(gap: string, left: NumberPart, right: NumberPart): boolean {
  if (gap.length === 0) return left.digits === '+'; // "+1"; but "5th" or "A1" are not numbers joined
  if (/^[\s\-()/]{1,4}$/.test(gap)) return true;
  if (gap === '.') return !left.spoken && !right.spoken; // 555.123.4567, 192.168.0.1
  if (/^[,.]\s+$/.test(gap)) return left.spoken || right.spoken; // "five five five, one two three"
  return false;
}

/** The number starting at token i (and how many tokens it took), or null when none does. */
function numberAt(toks: Token[], i: number, text: string): [NumberPart, number] | null {
  const t = toks[i];
  const next = toks[i + 1];
  const adjacent = next !== undefined && /^[\s-]$/.test(text.slice(t.end, next.start));
  const part = (end: number, digits: string, spoken: boolean): NumberPart => ({ start: t.start, end, digits, spoken });
  // Digits glued to letters ("DE89", "5th", "A1") are part of a code or a word, not a number said.
  if (/^\d+$/.test(t.word))
    return /[A-Za-z]/.test(text[t.start - 1] ?? '') || /[A-Za-z]/.test(text[t.end] ?? '')
      ? null
      : [part(t.end, t.word, false), 1];
  if (t.word === '+' || t.word === 'plus')
    return next && (/^\d+$/.test(next.word) || next.word in UNITS) ? [part(t.end, '+', t.word === 'plus'), 1] : null;
  if (t.word in UNITS) return [part(t.end, UNITS[t.word], true), 1];
  if (t.word in TEENS) return [part(t.end, TEENS[t.word], true), 1];
  if (t.word in TENS) {
    // "twenty three" is 23; "twenty" alone is 20.
    if (adjacent && next.word in UNITS && next.word !== 'zero' && next.word !== 'oh')
      return [part(next.end, TENS[t.word] + UNITS[next.word], true), 2];
    return [part(t.end, TENS[t.word] + '0', true), 1];
  }
  if (t.word in REPEAT && adjacent && next.word in UNITS)
    return [part(next.end, UNITS[next.word].repeat(REPEAT[t.word]), true), 2];
  return null;
}

/** Every run of numbers in `text`, with its digits and parts. */
export function numberRuns(text: string): NumberRun[] {
  const toks = tokens(text);
  const runs: NumberRun[] = [];
  let i = 0;
  while (i < toks.length) {
    const first = numberAt(toks, i, text);
    // "oh" alone is an interjection, not a zero.
    if (!first || (toks[i].word === 'oh' && !numberAt(toks, i + 1, text))) {
      i++;
      continue;
    }
    const parts: NumberPart[] = [first[0]];
    i += first[1];
    while (i < toks.length) {
      const last = parts[parts.length - 1];
      if (toks[i].word === 'hundred' && last.spoken) {
        // "eight hundred" is 800.
        parts[parts.length - 1] = { ...last, end: toks[i].end, digits: last.digits + '00' };
        i++;
        continue;
      }
      const n = numberAt(toks, i, text);
      if (!n || !joins(text.slice(last.end, n[0].start), last, n[0])) break;
      parts.push(n[0]);
      i += n[1];
    }
    if (parts.length === 1 && parts[0].digits === '+') continue;
    runs.push(runOf(parts));
  }
  return runs;
}

/** A run of the given consecutive parts. */
export function runOf(parts: NumberPart[]): NumberRun {
  return {
    start: parts[0].start,
    end: parts[parts.length - 1].end,
    digits: parts.map((p) => p.digits).join(''),
    spoken: parts.some((p) => p.spoken),
    parts,
  };
}

/** ISO/IEC 7812-1 Annex B (Luhn): the check digit of a card number. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return digits.length > 0 && sum % 10 === 0;
}
