// HTTP Digest as SIP uses it (RFC 3261 22.4, RFC 8760, RFC 7616 3.4): challenge and credential
// parameter lists, and the response computation for MD5 and SHA-256, with and without "-sess".

import { createHash } from 'node:crypto';

// RFC 8760 2.4: SIP carries these algorithms; SHA-512-256 is optional and not offered here.
export type DigestAlgorithm = 'MD5' | 'MD5-sess' | 'SHA-256' | 'SHA-256-sess';
export const DIGEST_ALGORITHMS: readonly DigestAlgorithm[] = ['SHA-256', 'SHA-256-sess', 'MD5', 'MD5-sess'];
export const QOP_AUTH = 'auth'; // RFC 7616 3.3; auth-int is not supported

/** An auth-param list: a parameter that is malformed is an error, never silently dropped. */
export class DigestFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DigestFormatError';
  }
}

export interface DigestChallenge {
  realm: string;
  nonce: string;
  opaque: string | null;
  algorithm: DigestAlgorithm;
  /** RFC 7616 3.3: qop options the server offers ("auth"); empty for RFC 2069 style. */
  qop: string[];
  /** RFC 7616 3.3: the nonce expired but the credentials were right; retry without asking the user. */
  stale: boolean;
}

export interface DigestCredentials {
  username: string;
  realm: string;
  nonce: string;
  uri: string;
  response: string;
  algorithm: DigestAlgorithm;
  cnonce: string | null;
  opaque: string | null;
  qop: string | null;
  /** nonce-count as its 8 hex digits (RFC 7616 3.4). */
  nc: string | null;
}

/** Split `Digest a=b, c="d, e"` into its scheme and lower-cased parameter names (RFC 7235 2.1). */
export function parseAuthParams(value: string): { scheme: string; params: Record<string, string> } {
  const text = value.trim();
  const space = text.search(/\s/);
  const scheme = space < 0 ? text : text.slice(0, space);
  const params: Record<string, string> = {};
  let i = space < 0 ? text.length : space;
  while (i < text.length) {
    while (i < text.length && (text[i] === ',' || text[i] === ' ' || text[i] === '\t')) i++;
    if (i >= text.length) break;
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new DigestFormatError(`auth-param without "=" at ${i}`);
    const name = text.slice(i, eq).trim().toLowerCase();
    if (!/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) throw new DigestFormatError(`bad auth-param name "${name}"`);
    i = eq + 1;
    while (text[i] === ' ' || text[i] === '\t') i++;
    let v = '';
    if (text[i] === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < text.length) i++; // RFC 3261 25.1 quoted-pair
        v += text[i++];
      }
      if (text[i] !== '"') throw new DigestFormatError(`unterminated quoted value for "${name}"`);
      i++;
    } else {
      const end = text.indexOf(',', i);
      v = (end < 0 ? text.slice(i) : text.slice(i, end)).trim();
      i = end < 0 ? text.length : end;
    }
    params[name] = v;
  }
  return { scheme, params };
}

function algorithmOf(value: string | undefined): DigestAlgorithm | null {
  if (value === undefined) return 'MD5'; // RFC 7616 3.3: absent means MD5
  const found = DIGEST_ALGORITHMS.find((a) => a.toLowerCase() === value.toLowerCase());
  return found ?? null;
}

/** A WWW-Authenticate / Proxy-Authenticate value, or null when it is not a Digest challenge we can answer. */
export function parseChallenge(value: string): DigestChallenge | null {
  const { scheme, params } = parseAuthParams(value);
  if (scheme.toLowerCase() !== 'digest') return null;
  const algorithm = algorithmOf(params.algorithm);
  if (algorithm === null || params.nonce === undefined) return null;
  return {
    realm: params.realm ?? '',
    nonce: params.nonce,
    opaque: params.opaque ?? null,
    algorithm,
    qop: params.qop
      ? params.qop
          .split(',')
          .map((q) => q.trim())
          .filter((q) => q.length > 0)
      : [],
    stale: (params.stale ?? '').toLowerCase() === 'true',
  };
}

/** An Authorization / Proxy-Authorization value, or null when it is not Digest. */
export function parseCredentials(value: string): DigestCredentials | null {
  const { scheme, params } = parseAuthParams(value);
  if (scheme.toLowerCase() !== 'digest') return null;
  const algorithm = algorithmOf(params.algorithm);
  if (algorithm === null) return null;
  const required = (key: string): string => {
    const value = params[key];
    if (value === undefined) throw new DigestFormatError(`credentials without ${key}`);
    return value;
  };
  return {
    username: required('username'),
    realm: required('realm'),
    nonce: required('nonce'),
    uri: required('uri'),
    response: required('response').toLowerCase(),
    algorithm,
    cnonce: params.cnonce ?? null,
    opaque: params.opaque ?? null,
    qop: params.qop ?? null,
    nc: params.nc ?? null,
  };
}

export function hashOf(algorithm: DigestAlgorithm, text: string): string {
  return createHash(algorithm.startsWith('SHA-256') ? 'sha256' : 'md5')
    .update(text, 'utf8')
    .digest('hex');
}

/** RFC 7616 3.4.2: A1 = username:realm:password, hashed; for "-sess", H(H(A1):nonce:cnonce). */
export function ha1Of(
  algorithm: DigestAlgorithm,
  username: string,
  realm: string,
  password: string,
  nonce: string,
  cnonce: string | null,
): string {
  const base = hashOf(algorithm, `${username}:${realm}:${password}`);
  if (!algorithm.endsWith('-sess')) return base;
  if (cnonce === null) throw new DigestFormatError(`${algorithm} needs a cnonce`);
  return hashOf(algorithm, `${base}:${nonce}:${cnonce}`);
}

export interface ResponseInput {
  algorithm: DigestAlgorithm;
  /** H(A1) before any "-sess" step (what a server may store instead of a password). */
  ha1Base: string;
  nonce: string;
  method: string;
  uri: string;
  qop: string | null;
  nc: string | null;
  cnonce: string | null;
}

/** RFC 7616 3.4.1 (RFC 2617 3.2.2.1 when qop is absent): the request-digest. */
export function computeResponse(input: ResponseInput): string {
  const { algorithm, nonce, method, uri, qop, nc, cnonce } = input;
  const ha1 = algorithm.endsWith('-sess')
    ? hashOf(algorithm, `${input.ha1Base}:${nonce}:${cnonce ?? ''}`)
    : input.ha1Base;
  const ha2 = hashOf(algorithm, `${method}:${uri}`); // RFC 7616 3.4.3, qop=auth
  if (qop === null) return hashOf(algorithm, `${ha1}:${nonce}:${ha2}`);
  return hashOf(algorithm, `${ha1}:${nonce}:${nc}:${cnonce}:${qop}:${ha2}`);
}

function quoted(v: string): string {
  return `"${v.replace(/(["\\])/g, '\\$1')}"`;
}

/** RFC 7616 3.4: algorithm, qop and nc are never quoted; the rest are quoted strings. */
export function formatCredentials(c: DigestCredentials): string {
  const parts = [
    `username=${quoted(c.username)}`,
    `realm=${quoted(c.realm)}`,
    `nonce=${quoted(c.nonce)}`,
    `uri=${quoted(c.uri)}`,
    `response=${quoted(c.response)}`,
    `algorithm=${c.algorithm}`,
  ];
  if (c.cnonce !== null) parts.push(`cnonce=${quoted(c.cnonce)}`);
  if (c.opaque !== null) parts.push(`opaque=${quoted(c.opaque)}`);
  if (c.qop !== null) parts.push(`qop=${c.qop}`);
  if (c.nc !== null) parts.push(`nc=${c.nc}`);
  return `Digest ${parts.join(', ')}`;
}

export function formatChallenge(c: DigestChallenge): string {
  const parts = [`realm=${quoted(c.realm)}`, `nonce=${quoted(c.nonce)}`];
  if (c.opaque !== null) parts.push(`opaque=${quoted(c.opaque)}`);
  parts.push(`algorithm=${c.algorithm}`);
  if (c.qop.length > 0) parts.push(`qop=${quoted(c.qop.join(','))}`);
  if (c.stale) parts.push('stale=true');
  return `Digest ${parts.join(', ')}`;
}

/** RFC 7616 3.4: nc is 8 lower-case hex digits. */
export function formatNonceCount(n: number): string {
  return n.toString(16).padStart(8, '0');
}
