// SIP trunks as configuration: the JSON file named by PARLEY_TRUNKS_FILE (docs/telephony.md, "Trunks").
import { z } from 'zod';
import { isSipUri, parseUri, serializeUri } from '../../sip/message/index.js';
import { addressEntryProblem } from '../auth/addresses.js';
import { e164 } from './common.js';

export const TRUNK_TRANSPORTS = ['udp', 'tcp'] as const;
export type TrunkTransport = (typeof TRUNK_TRANSPORTS)[number];

const TRUNK_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const DEFAULT_INBOUND_REALM = 'parley';

/** An address or CIDR range (IPv4 or IPv6) a trunk may send calls from. */
const sourceEntry = z.string().superRefine((entry, ctx) => {
  const problem = addressEntryProblem(entry);
  if (problem) ctx.addIssue({ code: 'custom', message: `'${entry}' ${problem}` });
});

/** Credentials Parley challenges the trunk's INVITEs with (RFC 3261 22.4). */
const inboundAuth = z
  .object({
    realm: z.string().min(1).max(200).default(DEFAULT_INBOUND_REALM),
    username: z.string().min(1).max(200),
    password: z.string().min(1).max(200),
  })
  .strict();

/** Credentials Parley answers the trunk's 401/407 with (RFC 3261 22.2); `realm` limits them to that realm. */
const outboundAuth = z
  .object({
    username: z.string().min(1).max(200),
    password: z.string().min(1).max(200),
    realm: z.string().min(1).max(200).optional(),
  })
  .strict();

const inbound = z
  .object({
    /** Addresses or CIDR ranges the trunk's INVITEs may come from. */
    sources: z.array(sourceEntry).min(1, 'must list at least one address or CIDR range'),
    auth: inboundAuth.nullable().default(null),
    /** The trunk follows a 302 Parley answers (a call forwarded by `inbound_rollout`). */
    follow_redirects: z.boolean().default(false),
    /** Parley may transfer the trunk's calls with REFER (RFC 3515). */
    allow_refer: z.boolean().default(false),
    /** P-Asserted-Identity from this trunk is believed for the caller's number (RFC 3325 9.1). */
    trust_asserted_identity: z.boolean().default(true),
  })
  .strict();

/**
 * `sip:host[:port][;transport=tcp]` or a bare `host[:port]`, normalised to a sip: URI. The host is resolved per
 * RFC 3263 when the call is placed. sips: is refused: Parley's SIP transports are UDP and TCP.
 */
export const outboundUri = z
  .string()
  .min(1)
  .transform((text, ctx) => {
    // `host:5060` is a host and port, `sip:...` or `tel:...` a URI.
    const hasScheme = /^sips?:/i.test(text) || /^[A-Za-z][A-Za-z0-9+.-]*:(?!\d+(?:;|$))/.test(text);
    const withScheme = hasScheme ? text : `sip:${text}`;
    let uri;
    try {
      uri = parseUri(withScheme);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `'${text}' is not a SIP URI or host name: ${(err as Error).message}` });
      return z.NEVER;
    }
    if (!isSipUri(uri) || uri.scheme !== 'sip') {
      ctx.addIssue({
        code: 'custom',
        message: `'${text}' must be a sip: URI or a host name (sips: and TLS are not supported)`,
      });
      return z.NEVER;
    }
    const transport = uri.params.get('transport');
    if (transport !== undefined && !(TRUNK_TRANSPORTS as readonly string[]).includes((transport ?? '').toLowerCase())) {
      ctx.addIssue({ code: 'custom', message: `'${text}': transport must be udp or tcp` });
      return z.NEVER;
    }
    if (uri.user !== undefined || uri.headers.length > 0) {
      ctx.addIssue({ code: 'custom', message: `'${text}' must name the trunk's host only (no user part or headers)` });
      return z.NEVER;
    }
    return serializeUri(uri);
  });

const outbound = z
  .object({
    /** Proxy or registrar of the trunk: a sip: URI or host name. */
    uri: outboundUri,
    /** Forces the transport; unset: RFC 3263 chooses (NAPTR, SRV), else the URI's transport parameter. */
    transport: z.enum(TRUNK_TRANSPORTS).nullable().default(null),
    auth: outboundAuth.nullable().default(null),
    /** Caller ID used when the agent has no number of its own to present. */
    caller_id: e164.nullable().default(null),
  })
  .strict()
  .superRefine((o, ctx) => {
    const uri = parseUri(o.uri);
    const param = isSipUri(uri) ? uri.params.get('transport') : undefined;
    if (o.transport !== null && param !== undefined && (param ?? '').toLowerCase() !== o.transport) {
      ctx.addIssue({
        code: 'custom',
        path: ['transport'],
        message: `'${o.transport}' contradicts the URI's transport=${param}`,
      });
    }
  });

export const trunkConfig = z
  .object({
    name: z.string().regex(TRUNK_NAME_PATTERN, 'must be 1-64 letters, digits, "_", "." or "-"'),
    inbound: inbound.nullable().default(null),
    outbound: outbound.nullable().default(null),
  })
  .strict()
  .superRefine((t, ctx) => {
    if (t.inbound === null && t.outbound === null)
      ctx.addIssue({ code: 'custom', message: 'needs an inbound or an outbound section' });
  });

/** The whole file. At most one trunk carries outbound calls. */
export const trunksFile = z
  .object({ trunks: z.array(trunkConfig) })
  .strict()
  .superRefine((file, ctx) => {
    const names = new Set<string>();
    let outboundAt = -1;
    file.trunks.forEach((t, i) => {
      if (names.has(t.name))
        ctx.addIssue({ code: 'custom', path: ['trunks', i, 'name'], message: `duplicate trunk name '${t.name}'` });
      names.add(t.name);
      if (t.outbound === null) return;
      if (outboundAt >= 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['trunks', i, 'outbound'],
          message: `only one trunk may carry outbound calls ('${file.trunks[outboundAt].name}' already does)`,
        });
      } else outboundAt = i;
    });
  });

export type TrunkConfig = z.output<typeof trunkConfig>;
export type TrunkInbound = NonNullable<TrunkConfig['inbound']>;
export type TrunkOutbound = NonNullable<TrunkConfig['outbound']>;
export type TrunksFile = z.output<typeof trunksFile>;
