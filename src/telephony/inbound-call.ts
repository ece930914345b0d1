// An INVITE to Parley, from its arrival to the answer (docs/telephony.md): the trunk it comes from (403 from anywhere
// else), the source's INVITE rate (503 + Retry-After), the trunk's digest (401), the dialled number's agent (404
// unknown, 480 disabled), the agent's inbound_rollout (302 to the forward number), the project's cap (486), the
// codecs (488), an RTP port pair and a media worker (503), then 200 OK with the answer and call_start. Every refusal
// is an error mapped to its response in sip-errors.ts.
import {
  DigestServer,
  parseSdp,
  SdpParseError,
  serializeSdp,
  SipError,
  type InviteRequest,
  type InviteResponder,
  type UserAgent,
} from '../../sip/index.js';
import { serializeUri } from '../../sip/message/index.js';
import type { SessionDescription } from '../../sip/sdp/index.js';
import type { Logger } from '../log.js';
import type { Sql } from '../store/db.js';
import type { LeasePolicy } from '../store/leases.js';
import { newId } from '../store/ids.js';
import { agentDisabled } from '../domain/agent-write.js';
import { admitCall } from '../domain/calls.js';
import { agentForPhoneNumber } from '../domain/conversation-agent.js';
import { notFound } from '../domain/errors.js';
import type { AgentConfig } from '../schemas/agents.js';
import { callerNumber, dialledNumber } from './call-parties.js';
import type { CallControl } from './call-control.js';
import type { InviteRateLimit } from './invite-rate-limit.js';
import {
  answerInbound,
  callMediaOf,
  localMedia,
  offeredCallMedia,
  remoteMediaOf,
  type AgentAudioFormat,
} from './media-policy.js';
import { decideRollout } from './rollout.js';
import { CallRefused, rejectionOf, SERVER_ERROR, serviceUnavailable } from './sip-errors.js';
import type { Trunk, Trunks } from './trunks.js';

export interface InboundCallsOptions {
  ua: UserAgent;
  control: CallControl;
  trunks: Trunks;
  rateLimit: InviteRateLimit;
  sql: Sql;
  policy: LeasePolicy;
  /** The address put in SDP c= (advertisedAddress). */
  address: string;
  log: Logger;
  /** The node is stopping: new calls get 503. */
  isStopping(): boolean;
  /** The node drains: new INVITEs are refused (503); one already being set up goes on. */
  isDraining?(): boolean;
  /** Uniform in [0, 1): the rollout draw. */
  random?: () => number;
}

/**
 * The digest algorithms a trunk is challenged with, in this order: MD5 first, the one every carrier and SBC answers
 * (RFC 3261 22.4), then SHA-256 (RFC 8760). A client that answers the first challenge it knows is not stopped by
 * one it does not.
 */
const TRUNK_DIGEST_ALGORITHMS = ['MD5', 'SHA-256'] as const;

/** The digest servers of the trunks that challenge their INVITEs, by trunk name (RFC 3261 22.4). */
function digestServers(trunks: Trunks): Map<string, DigestServer> {
  const out = new Map<string, DigestServer>();
  for (const trunk of trunks.all()) {
    const auth = trunk.inbound?.auth;
    if (!auth) continue;
    out.set(
      trunk.name,
      new DigestServer({
        realm: auth.realm,
        algorithms: TRUNK_DIGEST_ALGORITHMS,
        lookup: (username) => (username === auth.username ? { password: auth.password } : null),
      }),
    );
  }
  return out;
}

/** The host a 302 sends the trunk back to: its outbound proxy's when it has one, else where its INVITE came from. */
function trunkHost(trunk: Trunk, source: string): string {
  const uri = trunk.outbound?.uri;
  if (uri) {
    const host = /^sip:([^;:?]+|\[[^\]]+\])/.exec(uri)?.[1];
    if (host) return host;
  }
  return source.includes(':') ? `[${source}]` : source;
}

/** The INVITE's SDP offer; null for an INVITE without one (the offer then goes in our 200, RFC 3261 13.2.1). */
function offerOf(req: InviteRequest): SessionDescription | null {
  const text = req.body.toString('utf8');
  if (text.trim().length === 0) return null;
  try {
    return parseSdp(text);
  } catch (err) {
    if (!(err instanceof SdpParseError)) throw err;
    throw new CallRefused(488, 'Not Acceptable Here', `the offer is not valid SDP: ${err.message}`, [
      ['Warning', `399 parley "${err.message}"`],
    ]);
  }
}

/** The 'invite' listener of the user agent: answers or refuses each INVITE. */
export function inboundCalls(opts: InboundCallsOptions): (req: InviteRequest, res: InviteResponder) => void {
  const { ua, control, trunks, rateLimit, sql, policy, address, log } = opts;
  const random = opts.random ?? Math.random;
  const digests = digestServers(trunks);

  async function answer(req: InviteRequest, res: InviteResponder): Promise<void> {
    if (opts.isStopping() || opts.isDraining?.()) throw serviceUnavailable('this node is stopping');
    const source = req.source.address;
    const trunk = trunks.matchInbound(source);
    if (!trunk?.inbound) throw new CallRefused(403, 'Forbidden', `${source} is not a source of any trunk`);
    const rate = rateLimit.check(source);
    if (!rate.allowed) throw serviceUnavailable(`${source} is over its INVITE rate`, rate.retryAfterSec);
    const digest = digests.get(trunk.name);
    if (digest) {
      const check = digest.verify('INVITE', serializeUri(req.uri), req.headers.getAll('Authorization'));
      if (!check.ok) {
        throw new CallRefused(
          401,
          'Unauthorized',
          `digest ${check.reason}`,
          check.challenges.map((c) => ['WWW-Authenticate', c] as [string, string]),
        );
      }
    }

    const number = dialledNumber(req);
    if (number === null)
      throw new CallRefused(404, 'Not Found', 'neither the Request-URI nor To names an E.164 number');
    const owner = await agentForPhoneNumber(sql, number);
    if (!owner) throw notFound('phone number', number);
    const { agent } = owner;
    if (!owner.enabled) throw agentDisabled(agent.agent.name);
    const config = agent.config as unknown as AgentConfig;

    const route = decideRollout(config, random);
    if (route.route === 'forward') {
      if (!trunk.inbound.follow_redirects) {
        throw new CallRefused(
          480,
          'Temporarily Unavailable',
          `this call is forwarded to ${route.phoneNumber}, and trunk '${trunk.name}' follows no redirect`,
        );
      }
      // RFC 3261 21.3.3: 302 Moved Temporarily, the Contact saying where to call instead.
      res.send(302, 'Moved Temporarily', {
        headers: [['Contact', `<sip:${route.phoneNumber}@${trunkHost(trunk, source)}>`]],
      });
      return;
    }

    const offer = offerOf(req);
    const audioFormat: AgentAudioFormat = config.audio_format;
    // RFC 3264 6: the offer must hold a stream we can answer (PCMU or PCMA); checked before any lease is taken.
    const probe = offer ? answerInbound(offer, { audioFormat, address, port: 0 }) : null;
    if (probe && !probe.ok)
      throw new CallRefused(488, 'Not Acceptable Here', probe.reason, [['Warning', `304 parley "${probe.reason}"`]]);
    if (res.isCancelled) return;

    const callInfo = {
      from_phone_number: callerNumber(req, { trustAssertedIdentity: trunk.inbound.trust_asserted_identity }),
      to_phone_number: number,
      telephony_call_sid: req.headers.get('Call-ID') ?? '',
    };
    const conversationId = newId('conv');
    await admitCall(sql, policy, agent.orgId, agent.project.id, conversationId);
    const call = control.open({
      callId: newId('call'),
      conversationId,
      orgId: agent.orgId,
      projectId: agent.project.id,
      origin: 'telephony-inbound',
      trunk,
      localNumber: number,
    });
    const negotiated = probe?.ok ? probe.media : null;
    const media = negotiated ? callMediaOf(negotiated) : offeredCallMedia({ audioFormat, address, port: 0 });
    const port = await control.assign(call, {
      remote: negotiated ? remoteMediaOf(negotiated) : null,
      media,
      agent,
      callInfo,
      configurationEndpoint: owner.configurationEndpoint,
      overrides: null,
      listenOnly: config.listen_only_inbound_enabled,
    });
    if (res.isCancelled || opts.isStopping()) {
      // CANCEL (the UA answered 487) while the media was set up: the worker frees the ports, no record is made.
      control.hangup(call, res.isCancelled ? 'cancel' : 'shutdown');
      if (!res.isCancelled) throw serviceUnavailable('this node is stopping');
      return;
    }

    // The dialog answers later offers (re-INVITE, UPDATE) with the call's codec only: the conversation's audio
    // format is fixed at its start.
    const local = {
      ...localMedia({ audioFormat, address, port }),
      codecs: [media.codec === 'PCMA' ? ('PCMA' as const) : ('PCMU' as const)],
    };
    let dialog;
    try {
      if (offer) {
        const answered = answerInbound(offer, { audioFormat, address, port });
        if (!answered.ok) throw new Error(`the offer answered with port 0 could not be answered with port ${port}`);
        dialog = await ua.createUAS(req, { localSdp: serializeSdp(answered.answer), media: local });
      } else {
        // No offer: ours goes in the 200, the answer comes in the ACK (the dialog's 'modified').
        dialog = await ua.createUAS(req, { media: local });
      }
    } catch (err) {
      control.hangup(call, res.isCancelled ? 'cancel' : 'failed');
      if (err instanceof SipError && res.isCancelled) return; // cancelled as the answer went out
      throw err;
    }
    control.attachDialog(call, dialog);
    control.start(call);
    call.log.info({ to: number, workerId: call.workerId, rtpPort: port, codec: media.codec }, 'inbound call answered');
  }

  return (req, res) => {
    answer(req, res).catch((err: unknown) => {
      const rejection = rejectionOf(err);
      if (rejection === null) log.error({ err, callId: req.headers.get('Call-ID') }, 'inbound call failed');
      else
        log.debug(
          { status: rejection.status, reason: (err as Error).message, source: req.source.address },
          'inbound call refused',
        );
      const { status, reason, headers } = rejection ?? SERVER_ERROR;
      res.send(status, reason, { headers });
    });
  };
}
