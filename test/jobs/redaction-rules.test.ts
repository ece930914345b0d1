// The offline redaction rules: spoken and written forms of each tag, the hard negatives, overlaps, and the labelled
// set (test/fixtures/redaction) held to the floor measured by bench/redaction.ts, so a regression fails here.
import t from 'tap';
import { numberRuns, luhnValid } from '../../src/jobs/redaction/numbers.js';
import { redactText } from '../../src/jobs/redaction/redact.js';
import { applySpans, resolveOverlaps, type Span } from '../../src/jobs/redaction/spans.js';
import { audioSpans, TURN_PAD_MS, WORD_PAD_MS } from '../../src/jobs/redaction/timing.js';
import { loadLabelledSet, scoreSet } from '../fixtures/redaction/labelled-set.js';

const r = (text: string) => redactText(text).redacted;

t.test('numbers are read as said: digit words, oh, double, tens, hundreds, mixed with digits', async (t) => {
  const digits = (s: string) => numberRuns(s).map((x) => x.digits);
  t.same(digits('five five five, one two three, four five six seven'), ['5551234567']);
  t.same(digits('double five oh, twenty three, eighty eight'), ['5502388']);
  t.same(digits('eight hundred five five five one two one two'), ['8005551212']);
  t.same(digits('plus four four two zero'), ['+4420']);
  t.same(digits('(555) 123-4567'), ['5551234567']);
  t.same(digits('oh I see, five minutes'), ['5'], '"oh" alone is not a zero');
  t.same(digits('$1,299.99'), ['1', '29999'], 'a thousands comma does not join digits');
  t.ok(luhnValid('4111111111111111'));
  t.notOk(luhnValid('4111111111111112'));
});

t.test('each tag, written and spoken', async (t) => {
  t.equal(r('My number is five five five, one two three, four five six seven.'), 'My number is [PHONE].');
  t.equal(r('call (415) 555-0132 or +44 20 7946 0958'), 'call [PHONE] or [PHONE]');
  t.equal(r('It is john dot smith at example dot com or jane@example.org'), 'It is [EMAIL] or [EMAIL]');
  t.equal(r('SSN 123-45-6789; social is one two three, four five, six seven eight nine'), 'SSN [SSN]; social is [SSN]');
  t.equal(r('card 4111 1111 1111 1111'), 'card [CREDIT_CARD]');
  t.equal(r('card 4111 1111 1111 1112'), 'card 4111 1111 1111 1112', 'a number failing the Luhn check is not a card');
  t.equal(r('I was born on March 3rd, 1985'), 'I was born on [DATE_OF_BIRTH]');
  t.equal(r('I live at 1234 Elm Street, Springfield, IL 62704.'), 'I live at [ADDRESS].');
  t.equal(r('Hi, my name is John Smith and I need help'), 'Hi, my name is [NAME] and I need help');
  t.equal(r('IBAN DE89 3704 0044 0532 0130 00 please'), 'IBAN [IBAN] please');
  t.equal(
    r('IBAN DE89 3704 0044 0532 0130 01 please'),
    'IBAN DE89 3704 0044 0532 0130 01 please',
    'wrong check digits',
  );
  t.equal(r('my IP is 192.168.1.20, not 999.1.1.1'), 'my IP is [IP_ADDRESS], not 999.1.1.1');
  t.equal(r('My account number is 00234567891.'), 'My account number is [ACCOUNT_NUMBER].');
});

t.test('hard negatives stay as they are', async (t) => {
  for (const s of [
    "I'll call you in five minutes.",
    'Your order number is 5551234567.',
    'The total is $1,299.99.',
    'The meeting is on March 3rd, 2025 at 10:30.',
    'Visit us at example dot com.',
    'I walked 5 blocks down the road.',
    "This is Monday's delivery.",
    'Version 2.4.1 fixed it.',
  ]) {
    t.equal(r(s), s, s);
  }
});

t.test('overlapping spans: the longer wins, then the more specific', async (t) => {
  const s = (start: number, end: number, tag: Span['tag']): Span => ({ start, end, tag, source: 'rules' });
  t.same(resolveOverlaps([s(0, 5, 'NAME'), s(0, 10, 'ADDRESS'), s(12, 15, 'PHONE')]), [
    s(0, 10, 'ADDRESS'),
    s(12, 15, 'PHONE'),
  ]);
  t.same(resolveOverlaps([s(2, 6, 'NAME'), s(2, 6, 'EMAIL')]), [s(2, 6, 'EMAIL')]);
  t.equal(applySpans('abcdefghij', [s(1, 3, 'NAME'), s(5, 9, 'PHONE')]), 'a[NAME]de[PHONE]j');
});

t.test('the labelled set holds the measured floor (bench/redaction.ts)', async (t) => {
  const set = loadLabelledSet();
  t.ok(set.length >= 150, `${set.length} utterances`);
  const score = scoreSet(set, (text) => redactText(text).spans);
  const floors: Record<string, [number, number]> = {
    // [precision, recall], each at or a little under what was measured.
    PHONE: [0.95, 0.95],
    EMAIL: [0.95, 0.9],
    SSN: [0.95, 0.95],
    CREDIT_CARD: [0.95, 0.95],
    DATE_OF_BIRTH: [0.95, 0.95],
    ADDRESS: [0.95, 0.9],
    NAME: [0.9, 0.7],
    IBAN: [0.95, 0.95],
    IP_ADDRESS: [0.95, 0.95],
    ACCOUNT_NUMBER: [0.95, 0.95],
  };
  for (const [tag, [p, rec]] of Object.entries(floors)) {
    const s = score.perTag[tag]!;
    t.ok(s.expected > 0, `${tag} is in the set`);
    t.ok(s.precision >= p, `${tag} precision ${s.precision.toFixed(3)} >= ${p}`);
    t.ok(s.recall >= rec, `${tag} recall ${s.recall.toFixed(3)} >= ${rec}`);
  }
  t.ok(score.overall.precision >= 0.98, `overall precision ${score.overall.precision.toFixed(3)}`);
  t.ok(score.overall.recall >= 0.92, `overall recall ${score.overall.recall.toFixed(3)}`);
  t.ok(
    score.negativesWithFalsePositives <= 2,
    `${score.negativesWithFalsePositives} of ${score.negatives} utterances without PII redacted`,
  );
});

t.test(
  'time spans: the words a span covers, padded; the whole turn when words are missing or do not align',
  async (t) => {
    const text = 'Call me at five five five, one two one two.';
    const words = ['Call', 'me', 'at', 'five', 'five', 'five,', 'one', 'two', 'one', 'two.'].map((w, i) => ({
      text: w,
      start: 1 + i * 0.5,
      end: 1.4 + i * 0.5,
    }));
    const { spans } = redactText(text);
    const turn = { side: 'user' as const, startMs: 1000, durationMs: 6000 };
    t.same(audioSpans(text, spans, { ...turn, words }), [
      { side: 'user', startMs: 2500 - WORD_PAD_MS, endMs: 5900 + WORD_PAD_MS },
    ]);
    t.same(
      audioSpans(text, spans, turn),
      [{ side: 'user', startMs: 1000 - TURN_PAD_MS, endMs: 7000 + TURN_PAD_MS }],
      'no words: the whole turn, padded',
    );
    const other = words.map((w) => ({ ...w, text: 'unrelated' }));
    t.same(
      audioSpans(text, spans, { ...turn, words: other }),
      [{ side: 'user', startMs: 1000 - TURN_PAD_MS, endMs: 7000 + TURN_PAD_MS }],
      'words of another text: the whole turn',
    );
    t.same(audioSpans(text, [], { ...turn, words }), [], 'nothing to bleep');
  },
);
