// The phone transfers of one media worker's calls (docs/telephony.md, "Transfers"): a call's conversation asks for
// one (its tool call), the worker asks main (call_transfer request), and main's commands drive it: open_leg binds the
// new leg's ports (bridge.ts) before main INVITEs the target, bridge starts the relay once it answered, leg_hangup
// ends it, result settles a transfer without a bridge (REFER completed, nobody answered, failure). The tool call
// settles once the agent's part is over; a call that ends (the caller hung up, shutdown) settles its transfer first,
// so the record has the outcome.
import type {
  PhoneTransferHooks,
  PhoneTransferRequest,
  PhoneTransferResult,
} from '../conversation/tools/phone-transfer.js';
import type { Logger } from '../log.js';
import type { NativeUdpGroup, UdpIoError } from '../media/udp-native.js';
import type { CallInfo } from '../schemas/conversations.js';
import type { CallMedia, CallOrigin, TransferCommand, WorkerNotice } from '../workers/worker-protocol.js';
import { ANONYMOUS } from './call-parties.js';
import { TransferLeg } from './bridge.js';
import { detectVoicemail, type AnsweredBy } from './voicemail-detection.js';

/** One transfer under way on a call. */
export interface CallTransfer {
  id: number;
  request: PhoneTransferRequest;
  hooks: PhoneTransferHooks;
  settle(result: PhoneTransferResult): void;
  leg: TransferLeg | null;
  attempts: number;
  /** Why a cold transfer was bridged rather than REFERred. */
  referRefused: string | null;
  /** detect_voicemail: who answered the bridged leg. */
  answeredBy: AnsweredBy | null;
}

/** What a transfer needs of its call (call-session.ts CallSession). */
export interface TransferableCall {
  readonly callId: string;
  readonly log: Logger;
  readonly state: string;
  readonly origin: CallOrigin;
  readonly callInfo: CallInfo;
  readonly codecName: CallMedia['codec'];
  transfer: CallTransfer | null;
  /** The new leg while open (the call relays through it once bridged). */
  leg: TransferLeg | null;
}

export interface WorkerTransfersOptions {
  post(notice: WorkerNotice): void;
  /** The worker's UDP group (the leg's sockets join it). */
  group(): NativeUdpGroup;
  bindAddress: string;
  now(): number;
  log: Logger;
}

/** The number the new leg presents: the agent's (use_agent_phone_number), else the caller's; null for none. */
export function transferCallerId(
  session: Pick<TransferableCall, 'origin' | 'callInfo'>,
  useAgentPhoneNumber: boolean,
): string | null {
  const { from_phone_number: from, to_phone_number: to } = session.callInfo;
  // Inbound: the caller is From, the agent's number To; outbound the other way round.
  const inbound = session.origin === 'telephony-inbound';
  const number = useAgentPhoneNumber === inbound ? to : from;
  return number && number !== ANONYMOUS ? number : null;
}

/** The optional fields of a bridged result. */
const bridgedExtras = (t: CallTransfer): { refer_refused?: string; answered_by?: AnsweredBy } => ({
  ...(t.referRefused === null ? {} : { refer_refused: t.referRefused }),
  ...(t.answeredBy === null ? {} : { answered_by: t.answeredBy }),
});

export class WorkerTransfers {
  private nextId = 1;

  constructor(private readonly opts: WorkerTransfersOptions) {}

  /** A conversation's transfer of its call; resolves when the agent's part is over (phone-transfer.ts). */
  start(
    session: TransferableCall,
    request: PhoneTransferRequest,
    hooks: PhoneTransferHooks,
  ): Promise<PhoneTransferResult> {
    if (session.transfer !== null) {
      return Promise.resolve({
        outcome: 'failed',
        phone_number: request.phoneNumber,
        reason: 'another transfer of this call is under way',
        attempts: 0,
      });
    }
    if (session.state !== 'live') {
      return Promise.resolve({
        outcome: 'failed',
        phone_number: request.phoneNumber,
        reason: 'the call is not live',
        attempts: 0,
      });
    }
    const id = this.nextId++;
    return new Promise((resolve) => {
      const t: CallTransfer = {
        id,
        request,
        hooks,
        leg: null,
        attempts: 0,
        referRefused: null,
        answeredBy: null,
        settle: (result) => {
          if (session.transfer !== t) return;
          session.transfer = null;
          this.closeLeg(session, t);
          session.log.info({ transfer: result }, 'transfer settled');
          resolve(result);
        },
      };
      session.transfer = t;
      const callerId = transferCallerId(session, request.useAgentPhoneNumber);
      const agentNumber = transferCallerId(session, true);
      this.opts.post({
        type: 'call_transfer',
        callId: session.callId,
        event: { kind: 'request', transferId: id, request, callerId, agentNumber },
      });
    });
  }

  /** One of main's commands for the call's transfer. */
  command(session: TransferableCall, cmd: TransferCommand): void {
    const t = session.transfer;
    if (t === null || t.id !== cmd.transferId) {
      session.log.warn(
        { command: cmd.kind, transferId: cmd.transferId },
        'transfer command for no transfer under way: ignored',
      );
      if (cmd.kind === 'open_leg') this.legReady(session, cmd.transferId, 'no transfer under way');
      return;
    }
    switch (cmd.kind) {
      case 'open_leg': {
        try {
          const log = session.log;
          t.leg = TransferLeg.open(
            this.opts.group(),
            this.opts.bindAddress,
            cmd.rtpPort,
            session.codecName,
            this.opts.now,
            (err: UdpIoError) => log.warn({ err }, 'transfer leg RTP socket error'),
          );
        } catch (err) {
          return this.legReady(session, t.id, (err as Error).message);
        }
        session.leg = t.leg;
        return this.legReady(session, t.id, null);
      }
      case 'bridge': {
        const leg = t.leg;
        t.attempts = cmd.attempts;
        t.referRefused = cmd.referRefused;
        if (leg === null)
          return t.settle({
            outcome: 'failed',
            phone_number: t.request.phoneNumber,
            reason: 'no leg was opened',
            attempts: cmd.attempts,
          });
        try {
          leg.answer(cmd.remote, cmd.media);
        } catch (err) {
          return t.settle({
            outcome: 'failed',
            phone_number: t.request.phoneNumber,
            reason: (err as Error).message,
            attempts: cmd.attempts,
          });
        }
        if (!t.request.detectVoicemail) return this.bridge(session, t, leg);
        this.screen(session, t, leg);
        return;
      }
      case 'leg_hangup': {
        // The target hung up: a bridge the agent left is over (the conversation ends); one it listens on returns the
        // caller to it.
        const duration = t.leg?.durationSec() ?? 0;
        const bridged = t.leg?.bridged ?? false;
        if (!bridged) {
          return t.settle({
            outcome: 'failed',
            phone_number: t.request.phoneNumber,
            reason: 'the target hung up before the bridge',
            attempts: t.attempts,
          });
        }
        return t.settle({
          outcome: t.request.keepListening ? 'bridge_ended' : 'transferred',
          method: 'bridge',
          phone_number: t.request.phoneNumber,
          bridge_duration_sec: duration,
          ended_by_party: 'target',
          attempts: t.attempts,
          ...bridgedExtras(t),
        });
      }
      case 'result':
        return t.settle(cmd.result);
    }
  }

  /** The call is ending (hang-up, RTP inactivity, shutdown): its transfer settles with what it came to. */
  callEnding(session: TransferableCall): void {
    const t = session.transfer;
    if (t === null) return;
    const leg = t.leg;
    if (leg?.bridged) {
      t.settle({
        outcome: 'transferred',
        method: 'bridge',
        phone_number: t.request.phoneNumber,
        bridge_duration_sec: leg.durationSec(),
        ended_by_party: 'caller',
        attempts: t.attempts,
        ...bridgedExtras(t),
      });
    } else {
      t.settle({
        outcome: 'failed',
        phone_number: t.request.phoneNumber,
        reason: 'the call ended before the transfer completed',
        attempts: t.attempts,
      });
    }
  }

  /** The relay starts on the answered leg; the conversation is told. */
  private bridge(session: TransferableCall, t: CallTransfer, leg: TransferLeg): void {
    const media = leg.answeredMedia!;
    leg.bridge(null, media, t.request.dtmf, t.request.keepListening);
    if (t.request.dtmf && !leg.sendsDigits)
      session.log.warn('the transfer target negotiated no telephone-event: its digits are not sent');
    session.log.info(
      { codec: media.codec, listening: t.request.keepListening, answeredBy: t.answeredBy?.result },
      'transfer bridged',
    );
    t.hooks.connected();
  }

  /**
   * detect_voicemail: the answering-machine detector reads the answered leg before anything is relayed. A person (or
   * no decision: `unknown`) is bridged; a machine is not: the leg stops receiving and main, told in leg_screened,
   * hangs it up and dials again or settles (on_transfer_no_answer). Main hears the outcome either way.
   */
  private screen(session: TransferableCall, t: CallTransfer, leg: TransferLeg): void {
    session.log.info('transfer target answered: screening for an answering machine');
    detectVoicemail(leg.targetFrames()).then(
      (answeredBy) => {
        // The transfer settled meanwhile (the call or the leg ended): the outcome has no one to go to.
        if (session.transfer !== t || t.leg !== leg || !leg.answered) return;
        t.answeredBy = answeredBy;
        session.log.info({ answeredBy }, 'transfer target screened');
        this.opts.post({
          type: 'call_transfer',
          callId: session.callId,
          event: { kind: 'leg_screened', transferId: t.id, answeredBy },
        });
        if (answeredBy.result === 'machine') leg.unanswer();
        else this.bridge(session, t, leg);
      },
      (err: unknown) => {
        session.log.error({ err }, 'answering-machine detection of the transfer leg failed');
        t.settle({
          outcome: 'failed',
          phone_number: t.request.phoneNumber,
          reason: `answering-machine detection failed: ${(err as Error).message}`,
          attempts: t.attempts,
        });
      },
    );
  }

  private closeLeg(session: TransferableCall, t: CallTransfer): void {
    const leg = t.leg;
    if (leg === null) return;
    t.leg = null;
    if (session.leg === leg) session.leg = null;
    session.log.info({ leg: leg.counters, durationSec: leg.durationSec() }, 'transfer leg closed');
    leg.close();
    this.opts.post({ type: 'call_transfer', callId: session.callId, event: { kind: 'leg_closed', transferId: t.id } });
  }

  private legReady(session: TransferableCall, transferId: number, error: string | null): void {
    this.opts.post({
      type: 'call_transfer',
      callId: session.callId,
      event:
        error === null
          ? { kind: 'leg_ready', transferId, ok: true }
          : { kind: 'leg_ready', transferId, ok: false, error },
    });
  }
}
