// One INVITE through the outbound trunk: its servers in turn (RFC 3263 4.3), its digest credentials, given up on
// at once when aborted before any provisional response; an answer that comes after that is hung up.
import { SipError, type Dialog, type LocalMedia, type UserAgent } from '../../sip/index.js';
import { isSipUri, parseUri, serializeUri } from '../../sip/message/index.js';
import type { Logger } from '../log.js';
import { failover, targetUri, type Locator } from './locate.js';
import type { Trunk } from './trunks.js';

export interface TrunkDial {
  ua: UserAgent;
  locator: Locator;
  outbound: NonNullable<Trunk['outbound']>;
  requestUri: string;
  from: string;
  media: LocalMedia;
  /** One Call-ID for every server tried (RFC 3261 8.1.3.4 keeps it across a retried request); else one each. */
  callId?: string;
  /** Aborting gives the INVITE up (CANCEL once it rings). */
  signal: AbortSignal;
  log: Logger;
  /** What the late answer's BYE is about, for the log. */
  what: string;
}

/** Whether the INVITE got a provisional response: read when the dial failed (rang, then no answer). */
export interface DialProgress {
  ringing: boolean;
}

/** The answered dialog; rejects with the last server's failure, or a 408 when given up before it rang. */
export async function dialThroughTrunk(d: TrunkDial, progress: DialProgress): Promise<Dialog> {
  const targets = await d.locator.locate(trunkUri(d.outbound));
  const auth = d.outbound.auth;
  const attempt = failover(
    targets,
    (target) =>
      d.ua.createUAC(d.requestUri, {
        media: d.media,
        from: d.from,
        proxy: targetUri(target),
        ...(d.callId === undefined ? {} : { callId: d.callId }),
        auth: auth ? { username: auth.username, password: auth.password, realm: auth.realm } : undefined,
        signal: d.signal,
        onProvisional: () => {
          progress.ringing = true;
        },
      }),
    { signal: d.signal },
  );
  // RFC 3261 9.1: a CANCEL waits for a provisional response; with none, the INVITE would run on to Timer B.
  // Give up at once then; an answer that still comes is hung up.
  const unanswered = new Promise<never>((_, reject) => {
    const giveUp = () => {
      if (!progress.ringing)
        reject(new SipError(408, 'Request Timeout', 'no response to the INVITE before it was abandoned'));
    };
    if (d.signal.aborted) giveUp();
    else d.signal.addEventListener('abort', giveUp, { once: true });
  });
  try {
    return await Promise.race([attempt, unanswered]);
  } catch (err) {
    attempt.then(
      (late) =>
        late
          .bye()
          .catch((e: Error) => d.log.warn({ err: e }, `BYE of ${d.what} answered after it was abandoned failed`)),
      () => undefined, // the INVITE's own failure after we gave up on it: nothing left to do
    );
    throw err;
  }
}

/** An address as the host part of a SIP URI: IPv6 in brackets (RFC 3261 25.1). */
export const hostPart = (address: string): string => (address.includes(':') ? `[${address}]` : address);

/** RFC 3323 4.1.1.3: the From of a call that presents no number. */
export const ANONYMOUS_FROM = '"Anonymous" <sip:anonymous@anonymous.invalid>';

/** The outbound trunk's URI with the transport its `transport` field forces. */
export function trunkUri(trunk: NonNullable<Trunk['outbound']>): string {
  const uri = parseUri(trunk.uri);
  if (!isSipUri(uri) || trunk.transport === null || uri.params.has('transport')) return trunk.uri;
  uri.params.set('transport', trunk.transport);
  return serializeUri(uri);
}

/** `sip:<number>@<the trunk's host[:port]>` (RFC 3261 19.1.1; a telephone number as the user part). */
export function requestUriFor(number: string, trunk: NonNullable<Trunk['outbound']>): string {
  const uri = parseUri(trunk.uri);
  if (!isSipUri(uri)) throw new Error(`outbound trunk URI ${trunk.uri} is not a sip: URI`);
  return `sip:${number}@${uri.host}${uri.port === undefined ? '' : `:${uri.port}`}`;
}
