// Zod pieces shared by every resource: identifiers, E.164, language codes, names, public HTTPS URLs, error bodies.
import { z } from 'zod';
import { hostProblem } from '../net/address-policy.js';

/** E.164: a plus, a non-zero digit, at most 15 digits in all (ITU-T E.164 6.1). */
export const E164_PATTERN = /^\+[1-9]\d{1,14}$/;
export const e164 = z.string().regex(E164_PATTERN, 'must be an E.164 phone number (e.g. +14155550123)');

/** Language codes: ISO 639-1 plus `fil` (ISO 639-2, Filipino) and `yue` (ISO 639-3, Cantonese). */
export const LANGUAGES = [
  'ar',
  'az',
  'bg',
  'bn',
  'cs',
  'da',
  'de',
  'el',
  'en',
  'es',
  'fa',
  'fi',
  'fil',
  'fr',
  'gu',
  'he',
  'hi',
  'hu',
  'id',
  'it',
  'ja',
  'ka',
  'km',
  'kn',
  'ko',
  'lt',
  'lv',
  'ml',
  'mr',
  'ms',
  'ne',
  'nl',
  'no',
  'pa',
  'pl',
  'pt',
  'ro',
  'ru',
  'si',
  'sk',
  'sq',
  'sv',
  'sw',
  'ta',
  'te',
  'th',
  'tr',
  'uk',
  'ur',
  'vi',
  'yue',
  'zh',
] as const;
export const lang = z.enum(LANGUAGES);
export type Lang = z.infer<typeof lang>;

/** snake_case, starting with a lowercase letter (names of external storage policies, tools, ...). */
export const SNAKE_CASE_PATTERN = /^[a-z][a-z0-9_]*$/;
export const snakeCaseName = z
  .string()
  .max(64)
  .regex(SNAKE_CASE_PATTERN, 'must be snake_case starting with a lowercase letter');

/** An identifier string of any resource (`agent_<uuid>`, ...). */
export const id = z.string().min(1).max(200);
export const isoTimestamp = z.string().describe('ISO 8601 timestamp');

export const successBody = z.object({ success: z.boolean() });

/** Basic error body: `{error: {message, code?}}`. */
export const errorBody = z.object({ error: z.object({ message: z.string(), code: z.string().optional() }) });
/** Validation error body, keyed by dotted field path: 400, and 409 on external storage policy update. */
export const validationErrorBody = z.object({
  error: z.object({ message: z.string() }),
  param_errors: z.record(z.string(), z.string()),
});

// ---- publicly routable HTTPS URLs ---------------------------------------------------------------------------

/** What URL validation needs from the settings. */
export interface UrlRules {
  PARLEY_ALLOW_PRIVATE_ENDPOINTS: boolean;
}

/**
 * Why `raw` is not a publicly routable HTTPS URL without embedded credentials, or null when it is.
 * The host is judged by src/net/address-policy.ts: IP literals (numeric forms included, as the URL parser writes
 * them) by their special-purpose ranges, names by their form only (`localhost`, `.local`, `.internal`, single-label
 * names, empty labels): DNS is NOT resolved at validation time, so a public name that resolves to a private address
 * passes here and is refused by the guarded client (src/net/guarded-fetch.ts) when it is called.
 */
export function publicHttpsUrlProblem(raw: string, rules: UrlRules): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be a valid URL';
  }
  if (url.protocol !== 'https:') return 'must be an https:// URL';
  if (url.username || url.password) return 'must not contain credentials';
  if (rules.PARLEY_ALLOW_PRIVATE_ENDPOINTS) return null;
  const problem = hostProblem(url.hostname);
  if (!problem) return null;
  if (problem.kind === 'address') return `must be publicly routable (${problem.class} address)`;
  if (problem.reason === 'empty label') return 'must have a valid host name (empty label)';
  return 'must be publicly routable (local host name)';
}

/** Zod schema of a publicly routable HTTPS URL without embedded credentials (see publicHttpsUrlProblem). */
export function httpsPublicUrl(rules: UrlRules) {
  return z.string().superRefine((value, ctx) => {
    const problem = publicHttpsUrlProblem(value, rules);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
}
