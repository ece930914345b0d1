// Placing a call (POST /v1/conversations/outbound_call, through the domain's OutboundCalls): admit the conversation,
// give it an RTP port pair and a media worker, INVITE `to_phone_number` at the outbound trunk's host (RFC 3263
// servers in turn, digest answered), and wait for the outcome: answered -> the answer's media to the worker,
// call_start, and the answer once the worker created the record; otherwise the reason as a 409 code (no_answer,
// sip_call_failed, call_ended) and nothing recorded.
import { setTimeout as sleep } from 'node:timers/promises';
import { SipError, TransactionTimeoutError, TransportError, type Dialog, type UserAgent } from '../../sip/index.js';
import { newCallId } from '../../sip/message/index.js';
import type { Sql } from '../store/db.js';
import type { LeasePolicy } from '../store/leases.js';
import { newId } from '../store/ids.js';
import { conversationExists } from '../store/conversations.js';
import { admitCall } from '../domain/calls.js';
import { DomainError } from '../domain/errors.js';
import {
  OUTBOUND_CALL_FAILURE,
  outboundCallFailed,
  outboundCallerId,
  outboundOverrides,
  type OutboundCallRequest,
  type OutboundCalls,
} from '../domain/outbound-calls.js';
import type { AgentConfig } from '../schemas/agents.js';
import { ANONYMOUS } from './call-parties.js';
import type { CallAssignment, CallControl } from './call-control.js';
import { LocateError, type Locator } from './locate.js';
import { callMediaOf, localMedia, offeredCallMedia, remoteMediaOf } from './media-policy.js';
import { CallRefused } from './sip-errors.js';
import { ANONYMOUS_FROM, dialThroughTrunk, hostPart, requestUriFor, type DialProgress } from './trunk-dial.js';
import type { SipCall } from './sip-call.js';
import type { Trunk } from './trunks.js';

/** How often main looks whether the worker has created an answered call's record (before answering 201). */
const RECORD_POLL_MS = 10;
/**
 * A callee hanging up within this long of its answer never connected (409 call_ended, nothing recorded). Its BYE
 * leaves only once our ACK arrives, so it can be a few event-loop turns behind. Kept short: answering-machine
 * detection starts after it, so its times run from here, not from the 200.
 */
const ANSWER_SETTLE_MS = 40;

/** RFC 3261 21.4.9 / 21.4.18: the callee did not answer (408 Request Timeout, 480 Temporarily Unavailable). */
const NO_ANSWER_STATUSES = new Set([408, 480]);

export interface OutboundCallsOptions {
  ua: UserAgent;
  control: CallControl;
  /** The trunk with an outbound section, if any. */
  trunk: Trunk | null;
  locator: Locator;
  sql: Sql;
  policy: LeasePolicy;
  /** The address put in SDP c= and the From host (advertisedAddress). */
  address: string;
  /** PARLEY_RING_TIMEOUT_SEC in ms: how long an INVITE may go unanswered before it is cancelled. */
  ringTimeoutMs: number;
  /** Aborted when the node stops: calls being placed are cancelled. */
  stopping: AbortSignal;
  /** True while the node drains: new calls are refused, calls being placed go on. */
  isDraining?: () => boolean;
  /** How long a failed call waits for its worker to release it (so its lease is free when the error is answered). */
  releaseWaitMs: number;
  random?: () => number;
}

/** Why dialling stopped short of an answer: the ring timeout, the HTTP client going away, the node stopping. */
type AbortCause = 'ring_timeout' | 'client_gone' | 'stopping';

/** The 409 (or other domain error) a call that did not connect is answered with. */
function failureOf(err: unknown, cause: AbortCause | null, ringing: boolean): DomainError {
  if (err instanceof DomainError) return err;
  if (cause === 'stopping')
    return new DomainError('unavailable', 'the node is stopping; the call was cancelled', { code: 'unavailable' });
  if (cause === 'client_gone')
    return outboundCallFailed(OUTBOUND_CALL_FAILURE.callEnded, 'the request was abandoned; the call was cancelled');
  if (cause === 'ring_timeout') {
    return ringing
      ? outboundCallFailed(OUTBOUND_CALL_FAILURE.noAnswer, 'the callee did not answer within the ring timeout')
      : outboundCallFailed(OUTBOUND_CALL_FAILURE.sipCallFailed, 'the trunk did not respond within the ring timeout');
  }
  if (err instanceof SipError) {
    if (NO_ANSWER_STATUSES.has(err.status))
      return outboundCallFailed(
        OUTBOUND_CALL_FAILURE.noAnswer,
        `the callee did not answer (${err.status} ${err.reason})`,
      );
    return outboundCallFailed(OUTBOUND_CALL_FAILURE.sipCallFailed, `the call was refused: ${err.status} ${err.reason}`);
  }
  if (err instanceof TransportError || err instanceof TransactionTimeoutError || err instanceof LocateError) {
    return outboundCallFailed(OUTBOUND_CALL_FAILURE.sipCallFailed, `the trunk could not be reached: ${err.message}`);
  }
  if (err instanceof CallRefused) return new DomainError('unavailable', err.message, { code: 'unavailable' });
  return outboundCallFailed(OUTBOUND_CALL_FAILURE.sipCallFailed, `the call failed: ${(err as Error).message}`);
}

export class TelephonyOutboundCalls implements OutboundCalls {
  readonly #o: OutboundCallsOptions;
  readonly #random: () => number;

  constructor(opts: OutboundCallsOptions) {
    this.#o = opts;
    this.#random = opts.random ?? Math.random;
  }

  get hasTrunk(): boolean {
    return this.#o.trunk?.outbound != null;
  }

  async place(request: OutboundCallRequest, signal: AbortSignal): Promise<{ conversationId: string }> {
    const { control, sql, policy, address } = this.#o;
    const outbound = this.#o.trunk?.outbound;
    if (!outbound) {
      throw new DomainError('unavailable', 'no trunk carries outbound calls on this node', {
        code: 'outbound_trunk_not_configured',
      });
    }
    if (this.#o.stopping.aborted || this.#o.isDraining?.())
      throw new DomainError('unavailable', 'the node is stopping', { code: 'unavailable' });
    const agent = request.call.agent;
    if (agent === null) {
      // The media worker runs a call as a conversation of an agent (call_assigned.agent).
      throw new DomainError('invalid', 'invalid parameter config.agent: a placed call needs an agent', {
        code: 'agent_required',
        paramErrors: { 'config.agent': 'is required to place a call (a dry run may leave it out)' },
      });
    }
    const conversationId = newId('conv');
    await admitCall(sql, policy, request.orgId, request.call.project.id, conversationId);
    const call = control.open({
      callId: newId('call'),
      conversationId,
      orgId: request.orgId,
      projectId: request.call.project.id,
      origin: 'telephony-outbound',
      trunk: this.#o.trunk,
    });
    const callerId = await outboundCallerId(sql, request.call, outbound.caller_id, this.#random).catch(
      async (err: unknown) => {
        await control.abandon(call);
        throw err;
      },
    );
    call.localNumber = callerId;
    const sipCallId = newCallId(address.includes(':') ? `[${address}]` : address);
    const audioFormat = (agent.config as unknown as AgentConfig).audio_format;
    // The config's tools replace the agent's (their definitions resolved with the call).
    const callAgent = request.sent?.tools !== undefined ? { ...agent, tools: request.call.tools } : agent;
    const assignment: CallAssignment = {
      remote: null,
      media: offeredCallMedia({ audioFormat, address, port: 0 }),
      agent: callAgent,
      // The record names the SIP call (its Call-ID, chosen here so the worker has it before the INVITE goes out).
      callInfo: {
        from_phone_number: callerId ?? ANONYMOUS,
        to_phone_number: request.toPhoneNumber,
        telephony_call_sid: sipCallId,
      },
      configurationEndpoint: null,
      overrides: outboundOverrides(request.sent),
      listenOnly: false,
      // Every answered outbound call: who answered is known before the agent first speaks (docs/telephony.md).
      voicemailDetection: true,
    };
    let port: number;
    try {
      port = await control.assign(call, assignment);
    } catch (err) {
      throw failureOf(err, null, false);
    }

    const dialled = await this.#dial(
      call,
      request.toPhoneNumber,
      outbound,
      { callerId, audioFormat, port, sipCallId },
      signal,
    );
    if ('error' in dialled) {
      call.log.info({ err: dialled.error, cause: dialled.cause }, 'outbound call did not connect');
      await this.#fail(call);
      throw failureOf(dialled.error, dialled.cause, dialled.ringing);
    }
    const dialog = dialled.dialog;
    control.attachDialog(call, dialog);
    try {
      const negotiated = dialog.media;
      if (negotiated === null) throw new SipError(488, 'Not Acceptable Here', 'the answer has no usable audio stream');
      const media = callMediaOf(negotiated);
      const remote = remoteMediaOf(negotiated);
      if (media.codec !== call.media?.codec) {
        // The worker was assigned the codec offered first; the callee chose another: assign it again with that one.
        await control.reassign(call, { ...assignment, remote, media });
      } else {
        control.mediaUpdate(call, remote, media);
      }
      // A BYE right behind the 200 (answered and hung up at once) ends the call before it connects.
      await endedWithin(dialog, ANSWER_SETTLE_MS);
      if (dialog.state !== 'confirmed' || call.state !== 'held') {
        throw outboundCallFailed(OUTBOUND_CALL_FAILURE.callEnded, 'the callee hung up as the call was answered');
      }
    } catch (err) {
      await this.#fail(call);
      throw failureOf(err, null, true);
    }
    control.start(call);
    call.log.info(
      { to: request.toPhoneNumber, workerId: call.workerId, rtpPort: port, callId: dialog.callId },
      'outbound call answered',
    );
    // The 201 names a record the caller may read or cancel at once: answered only once the worker created it.
    if (!(await this.#recordCreated(call, conversationId))) {
      throw outboundCallFailed(OUTBOUND_CALL_FAILURE.callEnded, 'the call ended before its conversation started');
    }
    return { conversationId };
  }

  /**
   * Waits for the record the call's worker creates on call_start (through main's store). False when the call ended
   * without one (its creation failed, or a hang-up came first). Bounded by the call: a record that cannot be
   * created ends it (worker-side), and the node's stop ends every call.
   */
  async #recordCreated(call: SipCall, conversationId: string): Promise<boolean> {
    const exists = () => conversationExists(this.#o.sql, conversationId);
    let ended = false;
    void call.ended.then(() => (ended = true));
    for (;;) {
      if (await exists()) return true;
      if (ended) return exists();
      await sleep(RECORD_POLL_MS);
    }
  }

  /** The INVITE through the trunk's servers in turn (RFC 3263 4.3), until an answer, a refusal or an abort. */
  async #dial(
    call: SipCall,
    to: string,
    outbound: NonNullable<Trunk['outbound']>,
    media: { callerId: string | null; audioFormat: AgentConfig['audio_format']; port: number; sipCallId: string },
    signal: AbortSignal,
  ): Promise<{ dialog: Dialog } | { error: unknown; cause: AbortCause | null; ringing: boolean }> {
    const { ua, locator, address } = this.#o;
    const dialling = new AbortController();
    let cause: AbortCause | null = null;
    const progress: DialProgress = { ringing: false };
    const stop = (why: AbortCause) => () => {
      cause ??= why;
      dialling.abort();
    };
    const onClientGone = stop('client_gone');
    const onStopping = stop('stopping');
    const timer = setTimeout(stop('ring_timeout'), this.#o.ringTimeoutMs);
    signal.addEventListener('abort', onClientGone, { once: true });
    this.#o.stopping.addEventListener('abort', onStopping, { once: true });
    if (signal.aborted) onClientGone();
    if (this.#o.stopping.aborted) onStopping();
    try {
      const dialog = await dialThroughTrunk(
        {
          ua,
          locator,
          outbound,
          requestUri: requestUriFor(to, outbound),
          from: media.callerId === null ? ANONYMOUS_FROM : `<sip:${media.callerId}@${hostPart(address)}>`,
          media: localMedia({ audioFormat: media.audioFormat, address, port: media.port }),
          callId: media.sipCallId,
          signal: dialling.signal,
          log: call.log,
          what: 'a call',
        },
        progress,
      );
      call.log.debug({ callId: dialog.callId }, 'outbound call answered by the callee');
      return { dialog };
    } catch (error) {
      return { error, cause, ringing: progress.ringing };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onClientGone);
      this.#o.stopping.removeEventListener('abort', onStopping);
    }
  }

  /** A call that did not connect: its worker lets it go (no record), its lease is released; waits for that, bounded. */
  async #fail(call: SipCall): Promise<void> {
    const { control } = this.#o;
    if (call.state === 'setting_up') await control.abandon(call);
    else control.hangup(call, 'failed');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([call.ended, new Promise((r) => (timer = setTimeout(r, this.#o.releaseWaitMs)))]);
    clearTimeout(timer);
  }
}

/** Resolves once `dialog` ends or `ms` pass, whichever is first. */
function endedWithin(dialog: Dialog, ms: number): Promise<void> {
  if (dialog.state === 'terminated') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      dialog.off('ended', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    dialog.once('ended', done);
  });
}
