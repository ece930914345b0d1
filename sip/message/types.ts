// SIP message types (RFC 3261 section 7 and 25). Header values are kept as raw strings in wire order;
// the structured forms (URI, name-addr, Via, CSeq) are parsed on demand by the functions in this folder.
import type { Headers } from './headers.js';

/** Parameters (`;name=value` or `;name`), names lower-cased (RFC 3261 19.1.4, 20), in wire order. */
export type Params = Map<string, string | null>;

/** A sip: or sips: URI (RFC 3261 19.1). `user` and `password` are as on the wire (still %-escaped). */
export interface SipUri {
  scheme: 'sip' | 'sips';
  user?: string;
  password?: string;
  /** Host name, IPv4 address, or IPv6 reference in brackets (`[2001:db8::10]`). */
  host: string;
  port?: number;
  params: Params;
  /** URI headers (`?name=value&...`), names as on the wire, values still %-escaped. */
  headers: Array<[string, string]>;
}

/** Any other absolute URI (tel:, urn:, http:, unknown schemes): kept opaque (RFC 3261 25.1 absoluteURI). */
export interface OtherUri {
  scheme: string;
  /** Everything after the colon. */
  opaque: string;
}

export type Uri = SipUri | OtherUri;

/** name-addr or addr-spec with header parameters (From, To, Contact, Route, Record-Route...; RFC 3261 20.10). */
export interface NameAddr {
  displayName?: string;
  uri: Uri;
  params: Params;
  /** `*` in a Contact header (RFC 3261 10.2.2). */
  wildcard?: boolean;
}

/** One Via value (RFC 3261 20.42): `SIP/2.0/UDP host:port;branch=...;received=...;rport`. */
export interface Via {
  protocol: string;
  version: string;
  transport: string;
  host: string;
  port?: number;
  params: Params;
}

export interface CSeq {
  seq: number;
  method: string;
}

export interface SipRequest {
  kind: 'request';
  method: string;
  uri: Uri;
  version: string;
  headers: Headers;
  body: Buffer;
}

export interface SipResponse {
  kind: 'response';
  version: string;
  status: number;
  reason: string;
  headers: Headers;
  body: Buffer;
}

export type SipMessage = SipRequest | SipResponse;

/** RFC 3261 8.1.1.7: every branch an RFC 3261 element creates begins with this magic cookie. */
export const BRANCH_MAGIC_COOKIE = 'z9hG4bK';

export const SIP_VERSION = 'SIP/2.0';
