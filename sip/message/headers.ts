// Ordered SIP header fields (RFC 3261 7.3). Repeated fields and comma-separated values are both kept in
// wire order; `getAll` splits comma lists of the headers whose grammar allows them (RFC 3261 7.3.1).
// Compact forms are expanded to the long name on the way in (RFC 3261 7.3.3).

/** RFC 3261 7.3.3 and the extensions that define compact forms (RFC 3265, 3515, 3892, 3841, 4028, 4474). */
const COMPACT_FORMS: Record<string, string> = {
  i: 'Call-ID',
  m: 'Contact',
  e: 'Content-Encoding',
  l: 'Content-Length',
  c: 'Content-Type',
  f: 'From',
  s: 'Subject',
  k: 'Supported',
  t: 'To',
  v: 'Via',
  o: 'Event',
  r: 'Refer-To',
  b: 'Referred-By',
  u: 'Allow-Events',
  a: 'Accept-Contact',
  j: 'Reject-Contact',
  d: 'Request-Disposition',
  x: 'Session-Expires',
  y: 'Identity',
  n: 'Identity-Info',
};

/** Canonical spelling of the header names this stack and its users touch. */
const CANONICAL = new Map<string, string>(
  [
    'Accept',
    'Accept-Encoding',
    'Accept-Language',
    'Alert-Info',
    'Allow',
    'Allow-Events',
    'Authentication-Info',
    'Authorization',
    'Call-ID',
    'Call-Info',
    'Contact',
    'Content-Disposition',
    'Content-Encoding',
    'Content-Language',
    'Content-Length',
    'Content-Type',
    'CSeq',
    'Date',
    'Error-Info',
    'Event',
    'Expires',
    'From',
    'In-Reply-To',
    'Max-Forwards',
    'Min-Expires',
    'Min-SE',
    'MIME-Version',
    'Organization',
    'Path',
    'Priority',
    'Proxy-Authenticate',
    'Proxy-Authorization',
    'Proxy-Require',
    'RAck',
    'Reason',
    'Record-Route',
    'Refer-To',
    'Referred-By',
    'Reply-To',
    'Require',
    'Retry-After',
    'Route',
    'RSeq',
    'Server',
    'Service-Route',
    'Session-Expires',
    'Subject',
    'Subscription-State',
    'Supported',
    'Timestamp',
    'To',
    'Unsupported',
    'User-Agent',
    'Via',
    'Warning',
    'WWW-Authenticate',
    'P-Asserted-Identity',
    'P-Preferred-Identity',
    'Privacy',
    'Replaces',
    'Identity',
    'Identity-Info',
    'Accept-Contact',
    'Reject-Contact',
    'Request-Disposition',
  ].map((n) => [n.toLowerCase(), n]),
);

/** Headers whose ABNF is a comma-separated list (RFC 3261 25.1 and extensions). */
const LIST_HEADERS = new Set([
  'accept',
  'accept-encoding',
  'accept-language',
  'alert-info',
  'allow',
  'allow-events',
  'call-info',
  'contact',
  'content-encoding',
  'content-language',
  'error-info',
  'in-reply-to',
  'path',
  'proxy-require',
  'reason',
  'record-route',
  'require',
  'route',
  'service-route',
  'supported',
  'unsupported',
  'via',
  'warning',
  'p-asserted-identity',
  'p-preferred-identity',
  'privacy',
  'accept-contact',
  'reject-contact',
]);

/** Names seen before -> canonical name, so the common case costs one Map lookup (bounded: peers choose names). */
const NAME_CACHE = new Map<string, string>();
const NAME_CACHE_LIMIT = 2048;
/** Canonical name -> lookup key (lower case). */
const KEY_CACHE = new Map<string, string>();

/** Long, canonical name of a header name as it appeared on the wire (compact forms expanded). */
export function canonicalName(name: string): string {
  const cached = NAME_CACHE.get(name);
  if (cached !== undefined) return cached;
  const lower = name.toLowerCase();
  let canon: string;
  if (lower.length === 1 && COMPACT_FORMS[lower] !== undefined) canon = COMPACT_FORMS[lower];
  else canon = CANONICAL.get(lower) ?? name;
  if (NAME_CACHE.size < NAME_CACHE_LIMIT) NAME_CACHE.set(name, canon);
  return canon;
}

/** The case-insensitive lookup key of a header name. */
function keyOf(name: string): string {
  const canon = canonicalName(name);
  const cached = KEY_CACHE.get(canon);
  if (cached !== undefined) return cached;
  const key = canon.toLowerCase();
  if (KEY_CACHE.size < NAME_CACHE_LIMIT) KEY_CACHE.set(canon, key);
  return key;
}

export function isListHeader(name: string): boolean {
  return LIST_HEADERS.has(keyOf(name));
}

/**
 * Split a header value at top-level commas: not inside a quoted string (with `\` escapes) nor inside `<...>`.
 * Elements are trimmed; empty elements are kept so a validator can reject them (RFC 4475 3.1.2.1).
 */
export function splitList(value: string): string[] {
  const out: string[] = [];
  let start = 0;
  let quoted = false;
  let angle = false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (quoted) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) quoted = false;
    } else if (c === 0x22) quoted = true;
    else if (c === 0x3c) angle = true;
    else if (c === 0x3e) angle = false;
    else if (c === 0x2c && !angle) {
      out.push(value.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(value.slice(start).trim());
  return out;
}

/** The first element of a comma list (as splitList(value)[0], without splitting the rest). */
function firstOfList(value: string): string {
  let quoted = false;
  let angle = false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (quoted) {
      if (c === 0x5c) i++;
      else if (c === 0x22) quoted = false;
    } else if (c === 0x22) quoted = true;
    else if (c === 0x3c) angle = true;
    else if (c === 0x3e) angle = false;
    else if (c === 0x2c && !angle) return value.slice(0, i).trim();
  }
  return value.trim();
}

interface Field {
  name: string;
  key: string;
  value: string;
}

export class Headers {
  private fields: Field[] = [];

  constructor(init?: Iterable<readonly [string, string]>) {
    if (init) for (const [n, v] of init) this.add(n, v);
  }

  /** Append a field (after all others). */
  add(name: string, value: string): this {
    this.fields.push({ name: canonicalName(name), key: keyOf(name), value });
    return this;
  }

  /** Insert a field before every other field of that name (a new top Via, Record-Route...). */
  prepend(name: string, value: string): this {
    const canon = canonicalName(name);
    const key = canon.toLowerCase();
    const at = this.fields.findIndex((f) => f.key === key);
    const field = { name: canon, key, value };
    if (at < 0) this.fields.push(field);
    else this.fields.splice(at, 0, field);
    return this;
  }

  /** Replace every field of that name by one field, kept at the position of the first one. */
  set(name: string, value: string): this {
    const canon = canonicalName(name);
    const key = canon.toLowerCase();
    const at = this.fields.findIndex((f) => f.key === key);
    if (at < 0) {
      this.fields.push({ name: canon, key, value });
      return this;
    }
    this.fields[at] = { name: canon, key, value };
    this.fields = this.fields.filter((f, i) => i <= at || f.key !== key);
    return this;
  }

  /** Replace the first value of that name (the first element of a comma list), e.g. the top Via. */
  replaceFirst(name: string, value: string): this {
    const key = keyOf(name);
    const at = this.fields.findIndex((f) => f.key === key);
    const f = this.fields[at];
    if (f === undefined) return this.add(name, value);
    const rest = LIST_HEADERS.has(key) ? splitList(f.value).slice(1) : [];
    this.fields[at] = { name: f.name, key, value: rest.length > 0 ? [value, ...rest].join(', ') : value };
    return this;
  }

  /** Remove the first value of that name (the top Via when forwarding a response); false if none. */
  removeFirst(name: string): boolean {
    const key = keyOf(name);
    const at = this.fields.findIndex((f) => f.key === key);
    const f = this.fields[at];
    if (f === undefined) return false;
    const rest = LIST_HEADERS.has(key) ? splitList(f.value).slice(1) : [];
    if (rest.length > 0) this.fields[at] = { name: f.name, key, value: rest.join(', ') };
    else this.fields.splice(at, 1);
    return true;
  }

  /** Remove every field of that name; returns how many were removed. */
  delete(name: string): number {
    const key = keyOf(name);
    const before = this.fields.length;
    this.fields = this.fields.filter((f) => f.key !== key);
    return before - this.fields.length;
  }

  has(name: string): boolean {
    const key = keyOf(name);
    return this.fields.some((f) => f.key === key);
  }

  /** The first field's whole value. */
  get(name: string): string | undefined {
    const key = keyOf(name);
    for (const f of this.fields) if (f.key === key) return f.value;
    return undefined;
  }

  /** Every field's whole value, in order, without splitting commas. */
  getFields(name: string): string[] {
    const key = keyOf(name);
    const out: string[] = [];
    for (const f of this.fields) if (f.key === key) out.push(f.value);
    return out;
  }

  /** Every value, in order: repeated fields, and comma lists split for list headers (RFC 3261 7.3.1). */
  getAll(name: string): string[] {
    const key = keyOf(name);
    const split = LIST_HEADERS.has(key);
    const out: string[] = [];
    for (const f of this.fields) {
      if (f.key !== key) continue;
      if (split) for (const v of splitList(f.value)) out.push(v);
      else out.push(f.value);
    }
    return out;
  }

  /** The first value of that name: the first element of the first field's comma list for list headers. */
  first(name: string): string | undefined {
    const key = keyOf(name);
    for (const f of this.fields) {
      if (f.key !== key) continue;
      return LIST_HEADERS.has(key) ? firstOfList(f.value) : f.value;
    }
    return undefined;
  }

  /** Number of fields of that name (not of comma-separated values). */
  count(name: string): number {
    const key = keyOf(name);
    let n = 0;
    for (const f of this.fields) if (f.key === key) n++;
    return n;
  }

  /** All fields in wire order as [canonical name, value]. */
  entries(): Array<[string, string]> {
    return this.fields.map((f) => [f.name, f.value]);
  }

  get size(): number {
    return this.fields.length;
  }

  clone(): Headers {
    const h = new Headers();
    h.fields = this.fields.slice();
    return h;
  }

  /** Internal fast path for the parser: append with a name already canonical. */
  addCanonical(name: string, value: string): void {
    this.fields.push({ name, key: keyOf(name), value });
  }
}
