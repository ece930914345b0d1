// The phone calls of one media worker, by callId: main's telephony messages (src/workers/worker-protocol.ts
// CallMessage) arrive here, the calls' sockets share one NativeUdpGroup, and once per pacing-clock frame, after every
// conversation has ticked, each live call completes its packet and every call's packets of that frame leave in one
// group send (io_uring: one io_uring_enter). No timer per call or per packet: the worker's pacing clock drives it all.
import { performance } from 'node:perf_hooks';
import type { ConversationClient, ConversationOrigin, LiveConversation, PacingRegistry } from '../conversation/host.js';
import type { PacedStream } from '../media/pacing-clock.js';
import { NativeUdpGroup, UdpIoError, type NativeUdpGroupOptions } from '../media/udp-native.js';
import type { Logger } from '../log.js';
import type { EndedBy } from '../schemas/conversations.js';
import type { CallMessage, WorkerNotice } from '../workers/worker-protocol.js';
import { callCodec } from './call-media.js';
import { CallSession, type CallAssigned } from './call-session.js';
import { RtpEndpoint } from './rtp-endpoint.js';
import { mediaMetrics, type RtpTotals } from '../metrics/media.js';
import { WorkerTransfers } from './worker-transfer.js';

/** Calls a worker takes at most (two sockets each in its group); call_assigned beyond it is refused. */
export const WORKER_MAX_CALLS = 1000;
/** Sockets per call: RTP and RTCP, for the caller's leg and a bridged transfer's second leg. */
const SOCKETS_PER_CALL = 4;

export interface WorkerCallsOptions {
  workerId: number;
  /** The address the calls' RTP sockets bind (an IPv4 literal; 0.0.0.0 for every interface). */
  bindAddress: string;
  /** call_media_ready, call_ended, conversation_opened and conversation_closed go to main through it. */
  post(notice: WorkerNotice): void;
  /** The number of calls changed (they count in the worker's load). */
  loadChanged(): void;
  newConversation(client: ConversationClient, origin: ConversationOrigin): LiveConversation;
  /** The worker's pacing clock: its onFrameEnd must call frameEnd(). */
  pacing: PacingRegistry;
  /** PARLEY_RTP_TIMEOUT_SEC in ms. */
  rtpTimeoutMs: number;
  log: Logger;
  now?: () => number;
  wallNow?: () => number;
  maxCalls?: number;
  /** The group's backend and sizes (tests); by default io_uring where the kernel allows it. */
  udp?: NativeUdpGroupOptions;
}

/**
 * Also a PacedStream: registered while a call is live, so the worker's clock runs (and frameEnd comes) even when no
 * conversation is registered yet (one still configuring); its tick has nothing to do.
 */
export class WorkerCalls implements PacedStream {
  private readonly calls = new Map<string, CallSession>();
  /** The live calls, in a dense array for the per-frame loop. */
  private readonly live: CallSession[] = [];
  private group: NativeUdpGroup | null = null;
  private readonly maxCalls: number;
  private readonly ids: Uint32Array;
  private readonly counts: Uint32Array;
  private readonly sent: Uint32Array;
  private registered = false;
  private readonly now: () => number;
  private readonly wallNow: () => number;
  private readonly waiting = new Map<CallSession, () => void>();
  private readonly transfers: WorkerTransfers;
  /** Failed group sends (a kernel error naming one socket; the others' packets went out). */
  sendErrors = 0;

  constructor(private readonly opts: WorkerCallsOptions) {
    this.maxCalls = opts.maxCalls ?? WORKER_MAX_CALLS;
    this.ids = new Uint32Array(this.maxCalls * SOCKETS_PER_CALL);
    this.counts = new Uint32Array(this.maxCalls * SOCKETS_PER_CALL);
    this.sent = new Uint32Array(this.maxCalls * SOCKETS_PER_CALL);
    this.now = opts.now ?? (() => performance.now());
    this.wallNow = opts.wallNow ?? (() => Date.now());
    this.transfers = new WorkerTransfers({
      post: opts.post,
      group: () => (this.group ??= new NativeUdpGroup(this.maxCalls * SOCKETS_PER_CALL, this.opts.udp)),
      bindAddress: opts.bindAddress,
      now: this.now,
      log: opts.log,
    });
  }

  /** Calls this worker holds (assigned or live): they count in its load. */
  get count(): number {
    return this.calls.size;
  }

  /**
   * Metrics (src/metrics/media.ts), at snapshot time: calls held and live conversations by origin into the tallies,
   * and the inbound RTP of ended calls plus what live ones received so far (loss is counted when a call ends).
   */
  metricsInto(calls: Record<string, number>, conversations: Record<string, number>): RtpTotals {
    const ended = mediaMetrics.rtpEnded;
    const totals: RtpTotals = { received: ended.received, late: ended.late, lost: ended.lost };
    for (const call of this.calls.values()) {
      calls[call.origin] = (calls[call.origin] ?? 0) + 1;
      const r = call.reception;
      totals.received += r.received;
      totals.late += r.late;
    }
    for (const call of this.live) conversations[call.origin] = (conversations[call.origin] ?? 0) + 1;
    return totals;
  }

  session(callId: string): CallSession | undefined {
    return this.calls.get(callId);
  }

  /**
   * POST /v1/conversations/{id}/cancel of a live call's conversation (main found this worker its owner): it ends now,
   * `user_canceled` (the cancel's ending of the record stands), and main sends the BYE. false when no live call has it.
   */
  cancel(conversationId: string): boolean {
    for (const call of this.calls.values()) {
      if (call.conversationId !== conversationId || call.state !== 'live') continue;
      call.end('user_canceled', 'canceled through the API');
      return true;
    }
    return false;
  }

  /** One of main's telephony messages. */
  handle(msg: CallMessage): void {
    if (msg.type === 'call_assigned') return this.assign(msg);
    const call = this.calls.get(msg.callId);
    if (!call)
      return this.opts.log.warn(
        { type: msg.type, callId: msg.callId },
        'telephony message for a call this worker does not hold',
      );
    switch (msg.type) {
      case 'call_start': {
        const waiting = call.state === 'assigned';
        call.start();
        if (waiting && call.state === 'live') this.goneLive(call);
        return;
      }
      case 'call_media_update':
        return call.updateMedia(msg.remote, msg.media);
      case 'call_hangup':
        return call.hangup(msg.reason);
      case 'call_dtmf':
        return call.dtmfInfo(msg.digits);
      case 'call_transfer':
        return this.transfers.command(call, msg.command);
    }
  }

  private assign(msg: CallAssigned): void {
    const refuse = (error: string) => {
      this.opts.log.warn({ callId: msg.callId, rtpPort: msg.rtpPort, error }, 'call refused by the media worker');
      this.opts.post({ type: 'call_media_ready', callId: msg.callId, ok: false, error });
    };
    if (this.calls.has(msg.callId)) return refuse(`call ${msg.callId} is already assigned to this worker`);
    if (this.calls.size >= this.maxCalls) return refuse(`the worker holds its maximum of ${this.maxCalls} calls`);
    // RFC 3550 11: RTP on an even port, RTCP on the odd one above it.
    if (!Number.isInteger(msg.rtpPort) || msg.rtpPort % 2 !== 0 || msg.rtpPort < 2 || msg.rtpPort > 65534)
      return refuse(`RTP port ${msg.rtpPort} is not an even port`);
    let endpoint: RtpEndpoint;
    try {
      this.group ??= new NativeUdpGroup(this.maxCalls * SOCKETS_PER_CALL, this.opts.udp);
      const log = this.opts.log;
      endpoint = RtpEndpoint.open(
        this.group,
        this.opts.bindAddress,
        msg.rtpPort,
        callCodec(msg.media.codec).maxPayloadBytes,
        (err) => log.warn({ err, callId: msg.callId }, 'RTP socket receive error'),
      );
    } catch (err) {
      return refuse(
        err instanceof UdpIoError
          ? `binding ${this.opts.bindAddress}:${msg.rtpPort}/${msg.rtpPort + 1}: ${err.code}`
          : (err as Error).message,
      );
    }
    let call: CallSession;
    try {
      call = new CallSession(msg, {
        endpoint,
        now: this.now,
        wallNow: this.wallNow,
        rtpTimeoutMs: this.opts.rtpTimeoutMs,
        log: this.opts.log,
        newConversation: this.opts.newConversation,
        closed: (s, endedBy, started) => this.closed(s, endedBy, started),
        transfers: this.transfers,
        signal: (notice) => this.opts.post(notice),
      });
    } catch (err) {
      // A remote that is not IPv4, most likely (the sockets are IPv4).
      endpoint.close();
      return refuse((err as Error).message);
    }
    this.calls.set(msg.callId, call);
    this.opts.loadChanged();
    this.opts.post({ type: 'call_media_ready', callId: msg.callId, ok: true });
  }

  private goneLive(call: CallSession): void {
    this.live.push(call);
    this.opts.post({
      type: 'conversation_opened',
      workerId: this.opts.workerId,
      conversationId: call.conversationId,
      orgId: call.orgId,
    });
    if (!this.registered) {
      this.registered = true;
      this.opts.pacing.register(this);
    }
  }

  private closed(call: CallSession, endedBy: EndedBy, started: boolean): void {
    this.calls.delete(call.callId);
    const r = call.reception;
    const ended = mediaMetrics.rtpEnded;
    ended.received += r.received;
    ended.late += r.late;
    ended.lost += r.lost;
    if (r.received > 0) mediaMetrics.rtpJitter.observe(r.jitterMs / 1000);
    const i = this.live.indexOf(call);
    if (i >= 0) {
      this.live.splice(i, 1);
      this.opts.post({
        type: 'conversation_closed',
        workerId: this.opts.workerId,
        conversationId: call.conversationId,
      });
    }
    if (this.live.length === 0 && this.registered) {
      this.registered = false;
      this.opts.pacing.unregister(this);
    }
    this.opts.post({ type: 'call_ended', callId: call.callId, conversationId: call.conversationId, endedBy, started });
    this.opts.loadChanged();
    this.waiting.get(call)?.();
    this.waiting.delete(call);
  }

  /** PacedStream: keeps the clock running while calls are live (the work is in frameEnd). */
  tick(): void {}

  /** The pacing clock's frame end: every live call's frame, then one send of all their packets. */
  frameEnd(): void {
    const live = this.live;
    if (live.length === 0) return;
    const now = this.now();
    let n = 0;
    for (let i = 0; i < live.length; i++) {
      const call = live[i];
      call.frame(now);
      n = call.endpoint.collect(this.ids, this.counts, n);
      if (call.leg !== null) n = call.leg.endpoint.collect(this.ids, this.counts, n);
    }
    if (n > 0) this.send(n);
  }

  /**
   * One group send of n tables. A kernel error names the socket whose send failed (the ones before it went out, its
   * packet is lost as a full buffer's would be): logged, and the ones after it are sent.
   */
  private send(n: number): void {
    let from = 0;
    while (from < n) {
      try {
        if (from > 0) {
          this.ids.copyWithin(0, from, n);
          this.counts.copyWithin(0, from, n);
          n -= from;
          from = 0;
        }
        this.group!.sendMany(this.ids, this.counts, this.sent, n);
        return;
      } catch (err) {
        if (!(err instanceof UdpIoError) || err.handleIndex === undefined) throw err;
        this.sendErrors++;
        this.opts.log.warn({ err, socket: this.ids[err.handleIndex] }, 'RTP send failed for one call');
        from = err.handleIndex + 1;
      }
    }
  }

  /**
   * Worker shutdown: every call ends (a live one's record saved, ended_by error) and is reported with call_ended,
   * within graceMs; then the sockets' group closes.
   */
  async endAll(graceMs: number): Promise<void> {
    const all = [...this.calls.values()].map(
      (call) =>
        new Promise<void>((resolve) => {
          this.waiting.set(call, resolve);
          call.hangup('shutdown');
        }),
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(all), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    if (this.calls.size > 0)
      this.opts.log.error({ calls: [...this.calls.keys()] }, 'calls still ending at the end of the shutdown grace');
    else {
      this.group?.close();
      this.group = null;
    }
  }
}
