// Input the database can store and the validators can walk, checked once for a whole request body or STS message
// before any schema parses it: PostgreSQL's text and jsonb refuse NUL (U+0000), jsonb refuses unpaired UTF-16
// surrogates (RFC 8259 8.2), and a value nested without bound would overflow recursive validation and
// serialization. Object keys count as text too (template variable names, header names).
import { z } from 'zod';

/** The deepest nesting of objects and arrays any request body or STS message may have (a valid one needs ~16). */
export const MAX_JSON_DEPTH = 32;
export const UNSAFE_TEXT_MESSAGE = 'must not contain NUL characters or unpaired surrogates';
export const UNSAFE_KEY_MESSAGE = 'a key must not contain NUL characters or unpaired surrogates';
export const TOO_DEEP_MESSAGE = `must not nest objects and arrays deeper than ${MAX_JSON_DEPTH} levels`;

/** Any character worth a closer look: NUL or half of a surrogate pair. */
const SUSPECT = /[\0\uD800-\uDFFF]/;
/** NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const UNSAFE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether a string holds neither NUL nor an unpaired surrogate. */
export function isSafeText(s: string): boolean {
  return !SUSPECT.test(s) || !UNSAFE.test(s);
}

/** `s` with each NUL and unpaired surrogate replaced by U+FFFD (for text from peers that is kept, not refused). */
export function toSafeText(s: string): string {
  return isSafeText(s) ? s : s.replace(new RegExp(UNSAFE.source, 'g'), '\uFFFD');
}

/** Where a value breaks the rules (`path` from its root: keys and indexes) and what the rule says. */
export interface JsonProblem {
  path: (string | number)[];
  message: string;
}

/**
 * The first place where `value` holds unsafe text (in a string or a key) or nests deeper than MAX_JSON_DEPTH, or
 * null. A bad key is reported at its object's path, and too deep a value at its top-level field, so the message
 * never repeats the offending bytes or a path of dozens of levels. The walk stops at the depth limit, so any
 * value may be passed.
 */
export function jsonProblem(value: unknown): JsonProblem | null {
  const found = walk(value, 0);
  if (!found) return null;
  return found.message === TOO_DEEP_MESSAGE ? { ...found, path: found.path.slice(0, 1) } : found;
}

/** `depth`: how many objects and arrays enclose `value`. Paths are built only on the way back from a problem. */
function walk(value: unknown, depth: number): JsonProblem | null {
  if (typeof value === 'string') return isSafeText(value) ? null : { path: [], message: UNSAFE_TEXT_MESSAGE };
  if (typeof value !== 'object' || value === null) return null;
  if (depth >= MAX_JSON_DEPTH) return { path: [], message: TOO_DEEP_MESSAGE };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = walk(value[i], depth + 1);
      if (found) {
        found.path.unshift(i);
        return found;
      }
    }
    return null;
  }
  for (const key in value) {
    if (!isSafeText(key)) return { path: [], message: UNSAFE_KEY_MESSAGE };
    const found = walk((value as Record<string, unknown>)[key], depth + 1);
    if (found) {
      found.path.unshift(key);
      return found;
    }
  }
  return null;
}

/**
 * `schema`, behind jsonProblem: a value that fails it gets one issue at the problem's path and is not parsed
 * further (so a deeply nested value never reaches a recursive schema). For the STS messages, which the socket
 * parses whole; REST bodies get the same check from the control plane's preValidation hook.
 */
export function safeJson<T extends z.ZodType>(schema: T) {
  return z.preprocess((value, ctx) => {
    const problem = jsonProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message, input: value });
    return value;
  }, schema);
}
