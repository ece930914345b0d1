// A REFER from the peer (RFC 3515): the PBX or carrier transfers Parley's call elsewhere (docs/telephony.md,
// "Transfers asked by the peer"). Accepted (202) only on a call whose trunk has `inbound.allow_refer`; Parley then
// calls the Refer-To target itself, reports the progress in NOTIFYs (message/sipfrag: 100 Trying, then the final
// status), and on an answer the conversation goes on with the new party: the media worker's call is given the new
// leg's RTP peer, the new dialog becomes the call's, and the old one gets its BYE. A failed attempt leaves the call
// as it was. Each REFER is kept on the record (metadata.sip_refers).
//
// Where the new call goes:
// - a sip: URI whose host is an IP address among a trunk's `inbound.sources` (a PBX Parley trusts): to that URI;
// - else a telephone number (a tel: URI, or a sip: URI's user part that reads as E.164): through the outbound
//   trunk, as an outbound call goes (sip:<number>@<the trunk's host>, its servers in turn, its digest);
// - anything else is refused before the 202: 403 (not allowed, nowhere to send it, or this node's own SIP address),
//   416 (not sip: or tel:),
//   501 (an attended transfer with Replaces, or a method other than INVITE), 491 (a transfer already under way).
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import {
  SipError,
  type Dialog,
  type LocalMedia,
  type ReferEvent,
  type ReferRefusal,
  type ReferRequest,
  type UserAgent,
} from '../../sip/index.js';
import { isSipUri, serializeUri } from '../../sip/message/index.js';
import { DEFAULT_SIP_PORT } from '../../sip/transport/index.js';
import type { Sql } from '../store/db.js';
import { recordCallMetadata } from '../domain/calls.js';
import { toE164 } from './call-parties.js';
import type { CallControl } from './call-control.js';
import { failover, targetUri, type Locator } from './locate.js';
import { callMediaOf, localMedia, remoteMediaOf } from './media-policy.js';
import { ANONYMOUS_FROM, requestUriFor, trunkUri } from './trunk-dial.js';
import type { SipCall } from './sip-call.js';
import type { Trunk, Trunks } from './trunks.js';

/** Hosts meaning every interface of this machine: a listener bound to one is reached at any local address. */
const UNSPECIFIED_HOSTS = ['0.0.0.0', '::'];
/** RFC 4291 2.5.5.2: an IPv4-mapped IPv6 address reaches the IPv4 one. */
const IPV4_MAPPED = /^::ffff:(?<v4>\d+\.\d+\.\d+\.\d+)$/i;

/** The Refer-To URI's header that makes it an attended transfer (RFC 3891). */
const REPLACES = 'replaces';

/** One REFER as the record keeps it (metadata.sip_refers). */
export interface ReferRecord {
  refer_to: string;
  referred_by: string | null;
  /** `direct` (a trusted address) or `outbound_trunk`. */
  route: 'direct' | 'outbound_trunk';
  /** The new call's final status (200 when it connected), and its SIP Call-ID when it did. */
  status: number;
  reason: string;
  call_id: string | null;
  at: string;
}

export interface IncomingRefersOptions {
  ua: UserAgent;
  control: CallControl;
  trunks: Trunks;
  locator: Locator;
  sql: Sql;
  /** The address put in SDP c= and the From host. */
  address: string;
  /** PARLEY_RING_TIMEOUT_SEC in ms: how long the new call may ring. */
  ringTimeoutMs: number;
  now?: () => Date;
}

type Route =
  { kind: 'direct'; uri: string } | { kind: 'outbound_trunk'; uri: string; outbound: NonNullable<Trunk['outbound']> };

const refuse = (status: number, reason: string, warning: string): ReferRefusal => ({
  status,
  reason,
  headers: [['Warning', `399 parley "${warning}"`]],
});

export class IncomingRefers {
  readonly #o: IncomingRefersOptions;
  readonly #now: () => Date;
  /** Each call's REFERs so far. */
  readonly #records = new WeakMap<SipCall, ReferRecord[]>();
  /** The addresses this node's SIP listener is reached at (a Refer-To naming one, on its port, calls itself). */
  readonly #ownAddresses: Set<string>;

  constructor(opts: IncomingRefersOptions) {
    this.#o = opts;
    this.#now = opts.now ?? (() => new Date());
    this.#ownAddresses = new Set([opts.address, opts.ua.host]);
    if (UNSPECIFIED_HOSTS.includes(opts.ua.host)) {
      for (const list of Object.values(networkInterfaces()))
        for (const i of list ?? []) this.#ownAddresses.add(i.address);
      for (const h of UNSPECIFIED_HOSTS) this.#ownAddresses.add(h);
    }
  }

  /** Makes the call's dialog answer REFERs (CallControl calls it for each dialog it attaches). */
  attach(call: SipCall, dialog: Dialog): void {
    dialog.screenRefer = (refer) => {
      const decided = this.#decide(call, refer);
      if ('status' in decided)
        call.log.info({ referTo: serializeUri(refer.referTo.uri), status: decided.status }, 'REFER refused');
      return 'status' in decided ? decided : null;
    };
    dialog.on('refer', (event) => {
      const route = this.#decide(call, event);
      if ('status' in route)
        return void event
          .notify(route.status, route.reason)
          .catch((err: Error) => call.log.warn({ err }, 'NOTIFY failed'));
      call.transferring = 'peer';
      this.#transfer(call, dialog, event, route)
        .catch((err: unknown) => call.log.error({ err }, 'the transfer asked by REFER failed'))
        .finally(() => {
          if (call.transferring === 'peer') call.transferring = null;
        });
    });
  }

  /** Where a REFER's target is called, or why it is refused (RFC 3515 2.4.2: before the 202). */
  #decide(call: SipCall, refer: ReferRequest): Route | ReferRefusal {
    if (call.trunk?.inbound?.allow_refer !== true)
      return refuse(403, 'Forbidden', `trunk '${call.trunk?.name ?? 'none'}' may not transfer calls (allow_refer)`);
    if (call.state !== 'live') return refuse(403, 'Forbidden', 'the call is not connected');
    // RFC 3515 2.4.2 leaves the refusal open; 491 as for a request crossing one under way (RFC 3261 14.1).
    if (call.transferring === 'peer') return refuse(491, 'Request Pending', 'a transfer of this call is under way');
    if (call.transferring === 'agent') return refuse(491, 'Request Pending', 'the agent is transferring this call');
    // The new leg must take the call's codec, and Parley places calls with G.711 only.
    if (call.media?.codec !== 'PCMU' && call.media?.codec !== 'PCMA')
      return refuse(403, 'Forbidden', 'only a G.711 call can be transferred');
    const uri = refer.referTo.uri;
    if (uri.scheme === 'tel') {
      const number = toE164(`tel:${uri.opaque}`);
      return number === null
        ? refuse(403, 'Forbidden', 'the tel: Refer-To is not an E.164 number')
        : this.#viaTrunk(number);
    }
    if (!isSipUri(uri) || uri.scheme !== 'sip')
      return refuse(416, 'Unsupported URI Scheme', 'Refer-To must be a sip: or tel: URI');
    if (uri.headers.some(([name]) => name.toLowerCase() === REPLACES))
      return refuse(501, 'Not Implemented', 'attended transfer (Replaces) is not supported');
    const method = uri.params.get('method');
    if (method !== undefined && method !== null && method.toUpperCase() !== 'INVITE')
      return refuse(501, 'Not Implemented', 'only INVITE transfers are supported');
    const host = uri.host.replace(/^\[|\]$/g, '');
    // A call to this node would connect the conversation to a new one of its own, each talking to the other.
    if (this.#isThisNode(host, uri.port ?? DEFAULT_SIP_PORT))
      return refuse(403, 'Forbidden', 'Refer-To names this node');
    if (isIP(host) !== 0 && this.#o.trunks.matchInbound(host) !== null) {
      // A trusted address: called as given, without the URI's headers and method.
      return {
        kind: 'direct',
        uri: serializeUri({ ...uri, headers: [], params: new Map([...uri.params].filter(([k]) => k !== 'method')) }),
      };
    }
    const number = uri.user === undefined ? null : toE164(uri.user);
    if (number === null)
      return refuse(403, 'Forbidden', 'Refer-To is neither a trusted address nor a telephone number');
    return this.#viaTrunk(number);
  }

  #isThisNode(host: string, port: number): boolean {
    if (port !== this.#o.ua.port) return false;
    const v4 = IPV4_MAPPED.exec(host)?.groups?.v4;
    return this.#ownAddresses.has(v4 ?? host.toLowerCase());
  }

  #viaTrunk(number: string): Route | ReferRefusal {
    const outbound = this.#o.trunks.outbound()?.outbound;
    if (!outbound) return refuse(403, 'Forbidden', 'no outbound trunk to call the Refer-To number');
    return { kind: 'outbound_trunk', uri: requestUriFor(number, outbound), outbound };
  }

  /** Calls the target; on an answer moves the call to it; reports the outcome in NOTIFYs and on the record. */
  async #transfer(call: SipCall, old: Dialog, event: ReferEvent, route: Route): Promise<void> {
    const { control, ua, locator, address } = this.#o;
    const log = call.log.child({ referTo: route.uri });
    log.info({ route: route.kind }, 'REFER accepted: calling the target');
    const media = call.media;
    if (media === null || call.rtpPort === null) throw new Error('a live call without media');
    // The call's codec alone: the conversation's audio format is fixed, so the new party must take it.
    const codec = media.codec === 'PCMA' ? 'PCMA' : 'PCMU';
    // (audioFormat only orders the codecs, which are replaced.)
    const local: LocalMedia = {
      ...localMedia({ audioFormat: 'mulaw_8000', address, port: call.rtpPort }),
      codecs: [codec],
    };
    const from =
      call.localNumber === null
        ? ANONYMOUS_FROM
        : `<sip:${call.localNumber}@${address.includes(':') ? `[${address}]` : address}>`;
    const headers: Array<[string, string]> = event.referredBy ? [['Referred-By', event.referredBy]] : []; // RFC 3892
    const ringing = new AbortController();
    const timer = setTimeout(() => ringing.abort(), this.#o.ringTimeoutMs);
    // The call ending meanwhile cancels the new one.
    void call.ended.then(() => ringing.abort());
    let dialog: Dialog | null = null;
    let status: number;
    let reason: string;
    try {
      if (route.kind === 'direct') {
        dialog = await ua.createUAC(route.uri, { media: local, from, headers, signal: ringing.signal });
      } else {
        const outbound = route.outbound;
        const targets = await locator.locate(trunkUri(outbound));
        dialog = await failover(
          targets,
          (target) =>
            ua.createUAC(route.uri, {
              media: local,
              from,
              headers,
              proxy: targetUri(target),
              signal: ringing.signal,
              auth: outbound.auth
                ? { username: outbound.auth.username, password: outbound.auth.password, realm: outbound.auth.realm }
                : undefined,
            }),
          { signal: ringing.signal },
        );
      }
      if (dialog.media === null)
        throw new SipError(488, 'Not Acceptable Here', 'the answer has no usable audio stream');
      if (call.state !== 'live')
        throw new SipError(487, 'Request Terminated', 'the call ended while its transfer was answered');
      status = 200;
      reason = 'OK';
    } catch (err) {
      if (err instanceof SipError) {
        status = err.status;
        reason = err.reason;
      } else {
        status = 503;
        reason = 'Service Unavailable';
      }
      log.info({ err, status }, 'the transfer target did not connect');
      if (dialog !== null && dialog.state === 'confirmed')
        await dialog.bye().catch((e: Error) => log.warn({ err: e }, 'BYE of the abandoned transfer failed'));
      dialog = null;
    } finally {
      clearTimeout(timer);
    }

    if (dialog !== null) {
      // The new party's RTP to the media worker's call, the new dialog as the call's; the old one is let go.
      control.replaceDialog(call, dialog);
      control.mediaUpdate(call, remoteMediaOf(dialog.media!), callMediaOf(dialog.media!));
      log.info({ callId: dialog.callId }, 'transferred: the conversation goes on with the new party');
    }
    // RFC 3515 2.4.5: the final status ends the implicit subscription.
    await event
      .notify(status, reason)
      .catch((err: Error) => log.warn({ err }, 'the final NOTIFY of the transfer failed'));
    // RFC 5589 6.1: the transferee ends the old dialog once the transfer succeeded (the transferor may have already).
    if (dialog !== null && old.state === 'confirmed')
      await old.bye().catch((err: Error) => log.warn({ err }, 'BYE of the transferred dialog failed'));
    await this.#record(call, {
      refer_to: route.uri,
      referred_by: event.referredBy,
      route: route.kind,
      status,
      reason,
      call_id: dialog?.callId ?? null,
      at: this.#now().toISOString(),
    });
  }

  async #record(call: SipCall, entry: ReferRecord): Promise<void> {
    const list = [...(this.#records.get(call) ?? []), entry];
    this.#records.set(call, list);
    try {
      const written = await recordCallMetadata(this.#o.sql, call.conversationId, { sip_refers: list });
      if (!written) call.log.warn('the transfer was not recorded: the conversation has no live record');
    } catch (err) {
      call.log.error({ err }, 'recording the transfer on the conversation failed');
    }
  }
}
