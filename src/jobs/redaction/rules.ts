// The offline detectors: rules and well-kept libraries, no model. Numbers (phone, SSN, card, account) are judged on
// the runs of ./numbers.ts, so spoken forms count as written ones; phone numbers by libphonenumber-js, cards by
// the Luhn check and their issuer prefixes, IBANs by ibantools (ISO 13616 check digits), IP addresses by node:net.
// Context decides what digits alone cannot: a date is a date of birth only near "born" or "birthday", nine digits an
// SSN only when written 3-2-4 or near "social security", and digits after "order number" or a price are no one's.
// Names are found by cues ("my name is", "this is", "Mr.", a greeting) followed by capitalised words, since a
// transcript capitalises proper nouns; names and addresses said without a cue are the chat model's part.
import { isIP } from 'node:net';
import { isValidIBAN, electronicFormatIBAN } from 'ibantools';
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';
import { luhnValid, NUMBER_WORDS, numberRuns, runOf, type NumberRun } from './numbers.js';
import type { RedactionTag, Span } from './spans.js';

export interface RuleOptions {
  /** The country a phone number without its country code belongs to. */
  defaultCountry?: CountryCode;
}

const DEFAULT_COUNTRY: CountryCode = 'US';

const span = (start: number, end: number, tag: RedactionTag): Span => ({ start, end, tag, source: 'rules' });

/** The `n` characters before `at`, lower-cased (the context a detector reads). */
const before = (text: string, at: number, n: number) => text.slice(Math.max(0, at - n), at).toLowerCase();
const after = (text: string, at: number, n: number) => text.slice(at, at + n).toLowerCase();

// ---- e-mail ------------------------------------------------------------------------------------------------------

const WRITTEN_EMAIL = /\b[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b/g;
const TLDS = 'com|org|net|edu|gov|io|co|uk|us|de|fr|ca|au|info|biz|me|ai|app|dev|mail|ie|nl|es|it';
const LOCAL_WORD = '[a-z0-9]+';
const JOINER = '(?:\\s+(?:dot|underscore|dash|hyphen)\\s+|[._-])';
/** "john dot smith at example dot com", "j smith at gmail.com", "jane underscore doe at example dot co dot uk". */
const SPOKEN_EMAIL = new RegExp(
  `\\b(${LOCAL_WORD}(?:${JOINER}${LOCAL_WORD})*)\\s+at\\s+(${LOCAL_WORD}(?:(?:\\s+dot\\s+|\\.)${LOCAL_WORD})*?)(?:\\s+dot\\s+|\\.)(?:${TLDS})\\b`,
  'gi',
);
/** A single word before " at " that makes "at example dot com" a website or a place, not an address's local part. */
const NOT_LOCAL_PART = new Set([
  'look',
  'looking',
  'be',
  'me',
  'us',
  'you',
  'it',
  'that',
  'this',
  'them',
  'him',
  'her',
  'email',
  'reach',
  'find',
  'meet',
  'available',
  'website',
  'site',
  'visit',
  'go',
  'is',
  'are',
  'was',
  'online',
  'there',
  'here',
  'page',
  'arrive',
  'order',
  'ordered',
  'bought',
  'purchase',
  'listed',
  'posted',
  'check',
  'apply',
  'sign',
  'up',
  'signed',
]);

function emails(text: string): Span[] {
  const out: Span[] = [];
  for (const m of text.matchAll(WRITTEN_EMAIL)) out.push(span(m.index, m.index + m[0].length, 'EMAIL'));
  for (const m of text.matchAll(SPOKEN_EMAIL)) {
    const local = m[1].toLowerCase();
    if (NOT_LOCAL_PART.has(local)) continue;
    out.push(span(m.index, m.index + m[0].length, 'EMAIL'));
  }
  return out;
}

// ---- numbers -----------------------------------------------------------------------------------------------------

/** Words just before digits that make them someone else's number (an order, a price), not a person's. */
const NOT_PERSONAL =
  /\b(order|confirmation|tracking|reference|ref|invoice|case|ticket|claim|serial|model|part|flight|room|table|gate|item|sku|version|extension|ext|page|chapter|step|code)\s*(number|no\.?|#|id)?\s*(is|was|:)?\s*$/;
const CURRENCY_BEFORE = /[$€£¥]\s*$/;
const CURRENCY_AFTER = /^\s*(dollars|bucks|cents|euros|pounds|percent|%|usd|eur)\b/;
const PHONE_CUE = /\b(phone|call|calling|reach|cell|mobile|number|text|fax|contact|dial)\b/;
const SSN_CUE = /\b(social security|social|ssn|s s n|tax id|taxpayer)\b/;
const CARD_CUE = /\b(card|visa|mastercard|amex|american express|discover|credit|debit)\b/;
const ACCOUNT_CUE =
  /\b(account|acct|routing|member|policy|medical record|mrn|insurance|patient|subscriber)\s*(number|no\.?|#|id|i d)?\s*(is|was|:)?\s*$/;
/** ISO/IEC 7812 issuer prefixes of the major networks and the lengths each issues. */
const CARD_NETWORKS: [RegExp, number[]][] = [
  [/^4/, [13, 16, 19]], // Visa
  [/^(5[1-5]|2[2-7])/, [16]], // Mastercard
  [/^3[47]/, [15]], // American Express
  [/^(6011|65|64[4-9])/, [16, 17, 18, 19]], // Discover
  [/^35/, [16, 17, 18, 19]], // JCB
  [/^(30[0-5]|36|38)/, [14, 15, 16, 17, 18, 19]], // Diners Club
  [/^62/, [16, 17, 18, 19]], // UnionPay
];
const cardShaped = (d: string) =>
  CARD_NETWORKS.some(([prefix, lengths]) => prefix.test(d) && lengths.includes(d.length));

/** A run and every stretch of whole parts inside it, longest first (a phone number said before another number). */
function windows(run: NumberRun): NumberRun[] {
  const out: NumberRun[] = [];
  const n = run.parts.length;
  for (let len = n; len >= 1; len--)
    for (let i = 0; i + len <= n; i++) out.push(len === n ? run : runOf(run.parts.slice(i, i + len)));
  return out;
}

function isPhone(digits: string, country: CountryCode): boolean {
  if (digits.startsWith('+')) {
    const p = parsePhoneNumberFromString(digits);
    return p !== undefined && p.isPossible();
  }
  if (!/^\d+$/.test(digits)) return false;
  const p = parsePhoneNumberFromString(digits, country);
  if (!p || !p.isPossible()) return false;
  // NANP (ITU-T E.164 country code 1): the area code starts with 2 to 9.
  if (p.countryCallingCode === '1') return /^[2-9]\d{9}$/.test(p.nationalNumber);
  return true;
}

/** Area 001-899 except 666, group 01-99, serial 0001-9999 (SSA, "Social Security Number Randomization"). */
function ssnShaped(d: string): boolean {
  return /^\d{9}$/.test(d) && !/^(000|666|9)/.test(d) && d.slice(3, 5) !== '00' && d.slice(5) !== '0000';
}

function numberSpans(text: string, country: CountryCode): Span[] {
  const out: Span[] = [];
  for (const run of numberRuns(text)) {
    for (const w of windows(run)) {
      const ctx = before(text, w.start, 60);
      const near = before(text, w.start, 30);
      const digits = w.digits.replace('+', '');
      const raw = text.slice(w.start, w.end);
      if (
        NOT_PERSONAL.test(near) ||
        CURRENCY_BEFORE.test(before(text, w.start, 2)) ||
        CURRENCY_AFTER.test(after(text, w.end, 10))
      )
        continue;
      if (/^\d+\.\d+$/.test(raw)) continue; // a decimal
      let tag: RedactionTag | null = null;
      if (
        digits.length >= 13 &&
        digits.length <= 19 &&
        !w.digits.startsWith('+') &&
        luhnValid(digits) &&
        (cardShaped(digits) || CARD_CUE.test(ctx))
      )
        tag = 'CREDIT_CARD';
      else if (digits.length === 9 && ssnShaped(digits) && (/^\d{3}[- ]\d{2}[- ]\d{4}$/.test(raw) || SSN_CUE.test(ctx)))
        tag = 'SSN';
      else if (ACCOUNT_CUE.test(near) && digits.length >= 5) tag = 'ACCOUNT_NUMBER';
      else if (digits.length >= 10 && isPhone(w.digits, country)) tag = 'PHONE';
      else if (digits.length === 7 && !w.digits.startsWith('+') && /^[2-9]/.test(digits) && PHONE_CUE.test(ctx))
        tag = 'PHONE';
      if (!tag) continue;
      // "(555) 123-4567": the parenthesis belongs to the number.
      const start = tag === 'PHONE' && text[w.start - 1] === '(' ? w.start - 1 : w.start;
      out.push(span(start, w.end, tag));
      break;
    }
  }
  return out;
}

// ---- IBAN, IP address --------------------------------------------------------------------------------------------

const IBAN_CANDIDATE = /\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{1,4}){2,8}\b/g;

function ibans(text: string): Span[] {
  const out: Span[] = [];
  for (const m of text.matchAll(IBAN_CANDIDATE)) {
    // The pattern may take a following group too many: shorten group by group until the check digits hold.
    let candidate = m[0];
    while (candidate.length >= 15) {
      const iban = electronicFormatIBAN(candidate);
      if (iban && isValidIBAN(iban)) {
        out.push(span(m.index, m.index + candidate.length, 'IBAN'));
        break;
      }
      const cut = candidate.lastIndexOf(' ');
      if (cut < 0) break;
      candidate = candidate.slice(0, cut);
    }
  }
  return out;
}

const IPV4 = /\b\d{1,3}(?:\.\d{1,3}){3}\b/g;
const IPV6 = /(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){2,7}[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{1,4})*(?![\w:])/g;

function ipAddresses(text: string): Span[] {
  const out: Span[] = [];
  for (const re of [IPV4, IPV6]) {
    for (const m of text.matchAll(re))
      if (isIP(m[0]) !== 0) out.push(span(m.index, m.index + m[0].length, 'IP_ADDRESS'));
  }
  return out;
}

// ---- date of birth -----------------------------------------------------------------------------------------------

const MONTHS =
  'january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec';
const ORDINAL_WORDS =
  'first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth';
const DAY = `(?:\\d{1,2}(?:st|nd|rd|th)?|(?:twenty|thirty)[- ](?:${ORDINAL_WORDS})|${ORDINAL_WORDS})`;
const SPOKEN_YEAR =
  '(?:nineteen|twenty)[- ](?:oh[- ])?(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen)|two thousand(?: and)?(?: (?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty))?';
const YEAR = `(?:(?:19|20)\\d{2}|'?\\d{2}|${SPOKEN_YEAR})`;
const DATE = new RegExp(
  [
    `\\b(?:${MONTHS})\\.?\\s+(?:the\\s+)?${DAY}(?:,?\\s+(?:of\\s+)?${YEAR})?\\b`, // March 3rd, 1985
    `\\b(?:the\\s+)?${DAY}\\s+(?:of\\s+)?(?:${MONTHS})\\.?(?:,?\\s+${YEAR})?\\b`, // the third of March 1985
    `\\b\\d{1,2}[/.-]\\d{1,2}[/.-](?:\\d{4}|\\d{2})\\b`, // 03/14/1985
    `\\b(?:19|20)\\d{2}-\\d{2}-\\d{2}\\b`, // 1985-03-14
  ].join('|'),
  'gi',
);
const DOB_CUE = /\b(born|birthday|birth date|date of birth|dob|d\.o\.b\.?|d o b)\b/;

function datesOfBirth(text: string): Span[] {
  const out: Span[] = [];
  for (const m of text.matchAll(DATE)) {
    if (!DOB_CUE.test(before(text, m.index, 50))) continue;
    out.push(span(m.index, m.index + m[0].length, 'DATE_OF_BIRTH'));
  }
  return out;
}

// ---- address -----------------------------------------------------------------------------------------------------

const SUFFIXES =
  'street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|way|place|pl|terrace|ter|circle|cir|parkway|pkwy|highway|hwy|square|sq|trail|trl|plaza|crescent|close|row';
const NUM_WORD = `(?:${NUMBER_WORDS.join('|')})`;
const HOUSE = `(?:\\d{1,6}[A-Za-z]?|${NUM_WORD}(?:[\\s-]+${NUM_WORD}){0,4})`;
const STREET_WORD =
  "(?:[A-Z][a-z'’]+|\\d{1,3}(?:st|nd|rd|th)|(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)|[NSEW]\\.?)";
const UNIT = '(?:,?\\s*(?:apartment|apt\\.?|unit|suite|ste\\.?|#|number)\\s*[A-Za-z0-9-]+)?';
const STATES =
  'AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC|Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|Ohio|Oklahoma|Oregon|Pennsylvania|Tennessee|Texas|Utah|Vermont|Virginia|Washington|Wisconsin|Wyoming';
const CITY_STATE_ZIP = `(?:,?\\s+[A-Z][a-z]+(?:\\s[A-Z][a-z]+){0,2},?\\s+(?:${STATES})\\b(?:\\s+\\d{5}(?:-\\d{4})?)?|,\\s+[A-Z][a-z]+(?:\\s[A-Z][a-z]+){0,2}(?=[.,!?]|$)|\\s+\\d{5}(?:-\\d{4})?)?`;
const STREET = new RegExp(
  `\\b${HOUSE}\\s+(?:${STREET_WORD}\\s+){1,3}(?:${SUFFIXES})\\b\\.?${UNIT}${CITY_STATE_ZIP}`,
  'gi',
);
const PO_BOX = /\b(?:p\.?\s?o\.?|post office)\s+box\s+\d+\b/gi;
const ZIP_AFTER_CUE =
  /\b(?:zip|postal)(?:\s+code)?\s+(?:is\s+)?(\d{5}(?:-\d{4})?|(?:(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)[\s,-]+){4}(?:zero|oh|one|two|three|four|five|six|seven|eight|nine))\b/gi;

function addresses(text: string): Span[] {
  const out: Span[] = [];
  for (const m of text.matchAll(STREET)) {
    // The street's own words must look like a name: a capitalised word or an ordinal, not "down the road".
    const words = m[0].replace(new RegExp(`^${HOUSE}\\s+`, 'i'), '').split(/\s+/);
    if (
      !words
        .slice(0, -1)
        .some(
          (w) =>
            /^([A-Z]|\d{1,3}(st|nd|rd|th)$|(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)$)/i.test(
              w,
            ) && !/^(the|a|an|my|our|this|that)$/i.test(w),
        )
    )
      continue;
    if (
      !/^[A-Z\d]/.test(words[0]) &&
      !/^(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)$/i.test(words[0])
    )
      continue;
    let end = m.index + m[0].length;
    if (/[.,]$/.test(m[0]) && !/\b(st|ave|rd|blvd|ln|dr|ct|pl|ter|cir|pkwy|hwy|sq|trl|ste|apt)\.$/i.test(m[0])) end--;
    out.push(span(m.index, end, 'ADDRESS'));
  }
  for (const m of text.matchAll(PO_BOX)) out.push(span(m.index, m.index + m[0].length, 'ADDRESS'));
  for (const m of text.matchAll(ZIP_AFTER_CUE)) {
    const start = m.index + m[0].length - m[1].length;
    out.push(span(start, start + m[1].length, 'ADDRESS'));
  }
  return out;
}

// ---- names -------------------------------------------------------------------------------------------------------

/** Capitalised words that follow a cue without being a name ("this is Sunday", "I'm Sorry"). */
const NOT_A_NAME = new Set([
  'I',
  'The',
  'A',
  'An',
  'It',
  'This',
  'That',
  'Yes',
  'No',
  'Okay',
  'Ok',
  'Sorry',
  'Fine',
  'Good',
  'Great',
  'Here',
  'There',
  'Calling',
  'Just',
  'Not',
  'So',
  'Very',
  'Really',
  'Well',
  'Actually',
  'Sure',
  'Thanks',
  'Thank',
  'Hello',
  'Hi',
  'Hey',
  'Please',
  'Monday',
  'Tuesday',
  'Wednesday',
  'Thursday',
  'Friday',
  'Saturday',
  'Sunday',
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
  'Customer',
  'Support',
  'Service',
  'Sales',
  'Billing',
  'Everyone',
  'All',
  'Team',
  'Doctor',
  'Dr',
  'Mr',
  'Mrs',
  'Ms',
  'Again',
  'Back',
  'Looking',
  'Trying',
  'Going',
  'Interested',
  'Happy',
  'Glad',
  'Correct',
  'Right',
  'Wrong',
  'Done',
  'Ready',
  'Still',
  'Also',
  'What',
  'Who',
  'Your',
  'My',
  'Our',
  'We',
  'You',
  'He',
  'She',
  'They',
  'Me',
  'Him',
  'Her',
  'Amazon',
  'Google',
  'Apple',
  'Microsoft',
  'Parley',
  'English',
  'Spanish',
  'French',
  'German',
  'Christmas',
  'Easter',
  'Bye',
  'Goodbye',
  'Morning',
  'Afternoon',
  'Evening',
  'Night',
  'Today',
  'Tomorrow',
  'Yesterday',
  'Anyway',
]);
const NAME_WORD = "[A-Z][a-z]+(?:['’-][A-Z]?[a-z]+)?|[A-Z]'[A-Z][a-z]+|Mc[A-Z][a-z]+|Mac[A-Z][a-z]+";
const FULL_NAME = `((?:${NAME_WORD})(?:\\s+(?:[A-Z]\\.\\s+)?(?:${NAME_WORD})){0,2})`;
const CUED_NAME = new RegExp(
  `\\b(?:my name is|my name's|name is|names are|this is|i am|i'm|it's|im|speaking with|talking to|talk to|speak to|speak with|call me|ask for|asking for|transfer me to|my (?:wife|husband|son|daughter|mother|father|mom|dad|brother|sister|partner|friend|manager|boss|doctor|colleague|son's|daughter's|wife's|husband's)(?:'s name)?(?: is|,)?|(?:sincerely|regards|patient|caller)(?: is|,)?)\\s+(?=${FULL_NAME})`,
  'gi',
);
const TITLE_NAME = new RegExp(
  `\\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Doctor|Professor|Prof|Nurse|Officer)\\.?\\s+${FULL_NAME}`,
  'g',
);
const GREETING_NAME = new RegExp(
  `\\b(?:hi|hello|hey|thanks|thank you|bye|goodbye|dear|morning|evening|afternoon|sorry|okay|ok|yes|well)[,]?\\s+(${NAME_WORD})(?=\\s*[,.!?]|$)`,
  'gi',
);
const SPELLED_NAME =
  /\b(?:spelled|spelt|spell(?:ed|s)? it|that's|that is|it's)\s+((?:[A-Z](?:\s+|-|\.\s*)){2,}[A-Z])\b\.?/g;

function nameSpan(text: string, start: number, name: string): Span | null {
  // The cue matched case-insensitively: the name is the capitalised words that follow it, up to the first that is
  // not one ("John and I" is "John", "John Monday" is "John").
  const words: string[] = [];
  for (const w of name.split(/\s+/)) {
    if (!/^[A-Z]/.test(w) || NOT_A_NAME.has(w.replace(/(\.|['’]s)$/, ''))) break;
    words.push(w);
  }
  while (words.length > 0 && /^[A-Z]\.$/.test(words[words.length - 1])) words.pop();
  if (words.length === 0) return null;
  const kept = words.join(' ');
  const at = text.indexOf(kept, start);
  return at < 0 ? null : span(at, at + kept.length, 'NAME');
}

function names(text: string): Span[] {
  const out: Span[] = [];
  // A cue's name is read by lookahead, so a cue inside a rejected name ("I'm calling for my father, Henry") is
  // still found.
  for (const m of text.matchAll(CUED_NAME)) {
    const s = nameSpan(text, m.index + m[0].length, m[1]);
    if (s) out.push(s);
  }
  for (const re of [TITLE_NAME, GREETING_NAME]) {
    for (const m of text.matchAll(re)) {
      const s = nameSpan(text, m.index + m[0].length - m[1].length, m[1]);
      if (s) out.push(s);
    }
  }
  for (const m of text.matchAll(SPELLED_NAME)) {
    const at = m.index + m[0].indexOf(m[1]);
    out.push(span(at, at + m[1].length, 'NAME'));
  }
  return out;
}

/** Every span the offline rules find in `text` (overlapping; resolveOverlaps picks among them). */
export function ruleSpans(text: string, opts: RuleOptions = {}): Span[] {
  const country = opts.defaultCountry ?? DEFAULT_COUNTRY;
  return [
    ...emails(text),
    ...ibans(text),
    ...ipAddresses(text),
    ...numberSpans(text, country),
    ...datesOfBirth(text),
    ...addresses(text),
    ...names(text),
  ];
}
