// Transaction matching keys (RFC 3261 17.1.3 for clients, 17.2.3 for servers with the RFC 2543 fallback),
// and the CANCEL a client builds for an INVITE (9.1).
import { parseCSeq, parseNameAddr, parseVia } from '../message/address.js';
import { Headers } from '../message/headers.js';
import { BRANCH_MAGIC_COOKIE, SIP_VERSION, type SipMessage, type SipRequest } from '../message/types.js';
import { serializeUri } from '../message/uri.js';
import { SipParseError } from '../errors.js';

/** RFC 3261 17.1.3: a response matches the client transaction whose request had its top Via branch and CSeq method. */
export function clientKey(branch: string, method: string): string {
  return `${branch}|${method}`;
}

/** The client key a response belongs to. Throws SipParseError when its top Via or CSeq is malformed. */
export function responseKey(msg: SipMessage): string {
  const top = msg.headers.first('Via');
  if (top === undefined) throw new SipParseError('missing Via');
  const branch = parseVia(top).params.get('branch');
  if (!branch) throw new SipParseError('Via without branch');
  return clientKey(branch, parseCSeq(msg.headers.get('CSeq') ?? '').method);
}

export interface ServerKey {
  key: string;
  /** True for an RFC 3261 branch (magic cookie); false for the RFC 2543 fallback. */
  rfc3261: boolean;
}

function tagOfHeader(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    return parseNameAddr(value).params.get('tag') ?? undefined;
  } catch (err) {
    if (err instanceof SipParseError) return undefined;
    throw err;
  }
}

export function toTagOf(msg: SipMessage): string | undefined {
  return tagOfHeader(msg.headers.get('To'));
}

/**
 * RFC 3261 17.2.3: with a magic-cookie branch, a request matches on branch, top Via sent-by and method (ACK
 * matching INVITE). Without one (RFC 2543), on Request-URI, From tag, Call-ID, CSeq number, top Via and
 * method; the To tag is compared by the caller. `asMethod` looks up another method's transaction with the
 * same identifiers (a CANCEL finding its INVITE, 9.2). Throws SipParseError on a malformed top Via or CSeq.
 */
export function serverKey(req: SipRequest, asMethod?: string): ServerKey {
  const top = req.headers.first('Via');
  if (top === undefined) throw new SipParseError('missing Via');
  const via = parseVia(top);
  const cseq = parseCSeq(req.headers.get('CSeq') ?? '');
  const method = asMethod ?? (req.method === 'ACK' ? 'INVITE' : req.method);
  const branch = via.params.get('branch');
  // RFC 4475 3.2.1: a branch that is only the cookie carries no identifier: use the RFC 2543 rules.
  if (branch && branch.startsWith(BRANCH_MAGIC_COOKIE) && branch.length > BRANCH_MAGIC_COOKIE.length) {
    const sentBy = `${via.host.toLowerCase()}:${via.port ?? ''}`;
    return { key: `${branch}|${sentBy}|${method}`, rfc3261: true };
  }
  const sentBy = `${via.transport}/${via.host.toLowerCase()}:${via.port ?? ''};${branch ?? ''}`;
  const key = [
    '2543',
    serializeUri(req.uri),
    tagOfHeader(req.headers.get('From')) ?? '',
    (req.headers.get('Call-ID') ?? '').trim(),
    cseq.seq,
    sentBy,
    method,
  ].join('|');
  return { key, rfc3261: false };
}

/**
 * The CANCEL for an INVITE (RFC 3261 9.1): same Request-URI, Call-ID, To, From, CSeq number (method CANCEL),
 * a single Via equal to the INVITE's top Via (same branch), and the INVITE's Route headers.
 */
export function buildCancel(invite: SipRequest): SipRequest {
  const headers = new Headers();
  const via = invite.headers.first('Via');
  if (via !== undefined) headers.add('Via', via);
  headers.add('Max-Forwards', invite.headers.get('Max-Forwards') ?? '70');
  for (const route of invite.headers.getFields('Route')) headers.add('Route', route);
  headers.add('From', invite.headers.get('From') ?? '');
  headers.add('To', invite.headers.get('To') ?? '');
  headers.add('Call-ID', invite.headers.get('Call-ID') ?? '');
  const seq = (invite.headers.get('CSeq') ?? '').trim().split(/\s+/)[0];
  headers.add('CSeq', `${seq} CANCEL`);
  return { kind: 'request', method: 'CANCEL', uri: invite.uri, version: SIP_VERSION, headers, body: Buffer.alloc(0) };
}
