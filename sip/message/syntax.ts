// Lexical helpers of RFC 3261 25.1 shared by the URI, address and Via parsers.
import { SipParseError } from '../errors.js';
import type { Params } from './types.js';

// RFC 3261 25.1: token = 1*(alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~")
// A lookup table, built once: the parser asks this for every character of every name.
const TOKEN_TABLE = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-.!%*_+`'~")
  TOKEN_TABLE[c.charCodeAt(0)] = 1;

export function isTokenCode(code: number): boolean {
  return code < 128 && TOKEN_TABLE[code] === 1;
}

export function isToken(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) if (!isTokenCode(s.charCodeAt(i))) return false;
  return true;
}

export function isTokenChar(c: string): boolean {
  return c.length === 1 && isTokenCode(c.charCodeAt(0));
}

export function isWs(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0d || code === 0x0a;
}

export function skipWs(s: string, i: number): number {
  while (i < s.length && isWs(s.charCodeAt(i))) i++;
  return i;
}

/**
 * Read a quoted-string starting at s[i] === '"' (RFC 3261 25.1: quoted-pair = "\" (%x00-09 / %x0B-0C / %x0E-7F)).
 * Returns the unescaped text and the index after the closing quote. Throws on an unterminated string.
 */
export function readQuoted(s: string, i: number): { text: string; end: number } {
  let text = '';
  for (let j = i + 1; j < s.length; j++) {
    const c = s[j];
    if (c === '\\') {
      if (j + 1 >= s.length) break;
      text += s[++j];
    } else if (c === '"') return { text, end: j + 1 };
    else text += c;
  }
  throw new SipParseError('unterminated quoted string');
}

/** Quote a string for a display name or parameter value, escaping `"` and `\`. */
export function quote(s: string): string {
  return `"${s.replace(/["\\]/g, '\\$&')}"`;
}

/** The index just after the end of a bare parameter value: stops at whitespace, `;`, `,`, `?`, `>`. */
function valueEnd(s: string, i: number): number {
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (isWs(c) || c === 0x3b || c === 0x2c || c === 0x3f || c === 0x3e || c === 0x22) break;
    i++;
  }
  return i;
}

/**
 * Parse `*(SEMI generic-param)` from s[i]: SEMI and EQUAL may carry LWS (RFC 3261 25.1).
 * Values keep their quotes if quoted, so serializing gives the same text. Names are lower-cased.
 * Stops at end of string; throws on an empty name or stray characters.
 */
export function parseParams(s: string, i: number, params: Params): void {
  i = skipWs(s, i);
  while (i < s.length) {
    if (s[i] !== ';') throw new SipParseError(`unexpected "${s[i]}" in parameters`);
    i = skipWs(s, i + 1);
    const nameStart = i;
    while (i < s.length && isTokenCode(s.charCodeAt(i))) i++;
    if (i === nameStart) throw new SipParseError('empty parameter name');
    const name = s.slice(nameStart, i).toLowerCase();
    i = skipWs(s, i);
    let value: string | null = null;
    if (s[i] === '=') {
      i = skipWs(s, i + 1);
      if (s[i] === '"') {
        const q = readQuoted(s, i);
        value = s.slice(i, q.end);
        i = q.end;
      } else {
        const end = valueEnd(s, i);
        if (end === i) throw new SipParseError(`empty value for parameter ${name}`);
        value = s.slice(i, end);
        i = end;
      }
      i = skipWs(s, i);
    }
    params.set(name, value);
  }
}

export function serializeParams(params: Params): string {
  let out = '';
  for (const [k, v] of params) out += v === null ? `;${k}` : `;${k}=${v}`;
  return out;
}

/** A parameter value without surrounding quotes (and unescaped if it was quoted). */
export function unquoteParam(v: string | null | undefined): string | undefined {
  if (v === null || v === undefined) return undefined;
  if (v.length >= 2 && v[0] === '"') return readQuoted(v, 0).text;
  return v;
}

/** Strict decimal of at most `maxDigits`, within [0, max]; undefined otherwise. */
export function parseDecimal(s: string, max: number): number | undefined {
  if (!/^[0-9]{1,12}$/.test(s)) return undefined;
  const n = Number(s);
  return n <= max ? n : undefined;
}
