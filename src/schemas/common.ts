// Zod pieces shared by every resource: identifiers, E.164, language codes, names, public HTTPS URLs, error bodies.
import { isIP } from 'node:net';
import { z } from 'zod';

/** E.164: a plus, a non-zero digit, at most 15 digits in all (ITU-T E.164 6.1). */
export const E164_PATTERN = /^\+[1-9]\d{1,14}$/;
export const e164 = z.string().regex(E164_PATTERN, 'must be an E.164 phone number (e.g. +14155550123)');

/** Language codes: ISO 639-1 plus `fil` (ISO 639-2, Filipino) and `yue` (ISO 639-3, Cantonese). */
export const LANGUAGES = [
  'ar', 'az', 'bg', 'bn', 'cs', 'da', 'de', 'el', 'en', 'es', 'fa', 'fi', 'fil', 'fr', 'gu', 'he', 'hi', 'hu',
  'id', 'it', 'ja', 'ka', 'km', 'kn', 'ko', 'lt', 'lv', 'ml', 'mr', 'ms', 'ne', 'nl', 'no', 'pa', 'pl', 'pt',
  'ro', 'ru', 'si', 'sk', 'sq', 'sv', 'sw', 'ta', 'te', 'th', 'tr', 'uk', 'ur', 'vi', 'yue', 'zh',
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

// Special-purpose IPv4 ranges that are not publicly routable (RFC 6890, IANA special-purpose registry).
const PRIVATE_V4: [number, number][] = [
  ['0.0.0.0', 8], // RFC 1122 "this network"
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // RFC 6598 carrier-grade NAT
  ['127.0.0.0', 8], // RFC 1122 loopback
  ['169.254.0.0', 16], // RFC 3927 link-local
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // RFC 6890 IETF protocol assignments
  ['192.0.2.0', 24], // RFC 5737 TEST-NET-1
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // RFC 2544 benchmarking
  ['198.51.100.0', 24], // RFC 5737 TEST-NET-2
  ['203.0.113.0', 24], // RFC 5737 TEST-NET-3
  ['224.0.0.0', 4], // RFC 5771 multicast
  ['240.0.0.0', 4], // RFC 1112 reserved, and broadcast
].map(([a, bits]) => [v4ToInt(a as string), bits as number]);

function v4ToInt(addr: string): number {
  return addr.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function isPrivateV4(addr: string): boolean {
  const n = v4ToInt(addr);
  return PRIVATE_V4.some(([base, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(base / 2 ** (32 - bits)));
}

function isPrivateV6(addr: string): boolean {
  const a = addr.toLowerCase();
  if (a === '::' || a === '::1') return true; // RFC 4291 2.5.2, 2.5.3: unspecified, loopback
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a); // RFC 4291 2.5.5.2 IPv4-mapped
  if (mapped) return isPrivateV4(mapped[1]);
  // The same, as the URL parser writes it (`::ffff:a00:1`).
  const mappedHex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
  if (mappedHex) {
    const hi = parseInt(mappedHex[1], 16);
    const lo = parseInt(mappedHex[2], 16);
    return isPrivateV4(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`);
  }
  const first = parseInt(a.split(':')[0] || '0', 16);
  if ((first & 0xfe00) === 0xfc00) return true; // RFC 4193 unique local fc00::/7
  if ((first & 0xffc0) === 0xfe80) return true; // RFC 4291 link-local fe80::/10
  if ((first & 0xff00) === 0xff00) return true; // RFC 4291 multicast ff00::/8
  if (a.startsWith('2001:db8:') || a.startsWith('2001:0db8:')) return true; // RFC 3849 documentation
  return false;
}

/** Host names that only resolve inside a machine or a private network. */
const PRIVATE_NAME = /(^|\.)(localhost|local|internal|intranet|lan|home|corp|private|localdomain|home\.arpa)$/i;

/**
 * Why `raw` is not a publicly routable HTTPS URL without embedded credentials, or null when it is.
 * IP literals are checked against the special-purpose ranges; names are judged by their form only
 * (`localhost`, `.local`, `.internal`, single-label names): DNS is NOT resolved at validation time, so a public
 * name that resolves to a private address passes here and must be guarded where the request is made.
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
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  const kind = isIP(host);
  if (kind === 4) return isPrivateV4(host) ? 'must be publicly routable (private, loopback or link-local address)' : null;
  if (kind === 6) return isPrivateV6(host) ? 'must be publicly routable (private, loopback or link-local address)' : null;
  if (!host.includes('.') || PRIVATE_NAME.test(host)) return 'must be publicly routable (local host name)';
  return null;
}

/** Zod schema of a publicly routable HTTPS URL without embedded credentials (see publicHttpsUrlProblem). */
export function httpsPublicUrl(rules: UrlRules) {
  return z.string().superRefine((value, ctx) => {
    const problem = publicHttpsUrlProblem(value, rules);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
}
