// Via processing at the transport: stamping received/rport on requests (RFC 3261 18.2.1, RFC 3581 4) and
// choosing where a response goes (RFC 3261 18.2.2, RFC 3581 4).
import { parseVia, serializeVia } from '../message/address.js';
import { SipParseError } from '../errors.js';
import type { SipMessage, Via } from '../message/types.js';
import { DEFAULT_SIP_PORT, type Source, type TransportName } from './types.js';

/** `[2001:db8::1]` -> `2001:db8::1`; `::ffff:1.2.3.4` -> `1.2.3.4`. */
export function bareAddress(host: string): string {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return h.startsWith('::ffff:') && h.includes('.') ? h.slice(7) : h;
}

/**
 * RFC 3261 18.2.1: add `received` when the sent-by host differs from the packet's source address.
 * RFC 3581 4: when `rport` is present without a value, fill it with the source port and always add received.
 * Rewrites the top Via of `msg` in place; a malformed top Via is left for the validator to reject.
 */
export function stampReceived(msg: SipMessage, source: Source): void {
  const first = msg.headers.first('Via');
  if (first === undefined) return;
  let via: Via;
  try {
    via = parseVia(first);
  } catch (err) {
    if (err instanceof SipParseError) return;
    throw err;
  }
  let changed = false;
  const rport = via.params.has('rport');
  if (rport) {
    via.params.set('rport', String(source.port));
    changed = true;
  }
  if (rport || bareAddress(via.host).toLowerCase() !== source.address.toLowerCase()) {
    via.params.set('received', source.address);
    changed = true;
  }
  if (changed) msg.headers.replaceFirst('Via', serializeVia(via));
}

/** Where a response goes when it cannot use the connection its request arrived on. */
export interface ResponseDestination {
  transport: TransportName;
  /** An IP address, or a host name still to resolve. */
  host: string;
  port: number;
}

/**
 * RFC 3261 18.2.2 (unicast, no maddr) with RFC 3581 4: to `received` (or the sent-by host) at `rport` if it
 * has a value, else at the sent-by port (default 5060), over the Via's transport.
 */
export function responseDestination(via: Via): ResponseDestination {
  const transport: TransportName = via.transport === 'TCP' ? 'TCP' : 'UDP';
  const received = via.params.get('received');
  const host = bareAddress(received ?? via.host);
  const rport = via.params.get('rport');
  const rportNumber = rport ? Number(rport) : NaN;
  const port =
    Number.isInteger(rportNumber) && rportNumber > 0 && rportNumber <= 65535
      ? rportNumber
      : (via.port ?? DEFAULT_SIP_PORT);
  return { transport, host, port };
}
