// One phone call in its media worker: its RTP and RTCP (RtpEndpoint), its conversation, and the media between them.
//
// In, per packet as it arrives: RTP header -> payload type (the codec's or RFC 4733 telephone-event) -> symmetric RTP
// latch -> reception statistics (RFC 3550 A.1, A.8) -> jitter buffer, released on arrival -> the conversation's
// inbound chain (a lost packet concealed there). Telephone events become digits once each (RFC 4733: the receiver
// dedupes retransmissions and end repeats); without a negotiated telephone-event the decoded audio goes through the
// native DTMF detector instead.
// Out, on the worker's pacing clock: the conversation's 20 ms frames (already encoded) take one slot per clock frame;
// a slot it leaves empty is filled with encoded silence, so the peer gets an unbroken stream (a carrier may hang up
// on a silent one, and its jitter buffer needs the clock). Frames are packed a=ptime's worth per packet, with
// continuous sequence numbers and timestamps (RFC 3550 5.1). RFC 3551 4.1 reserves the marker bit for the first
// packet after a gap in transmission: the stream's first packet and the first after a hold. Hold (the peer sendonly
// or inactive) sends nothing, while the media clock runs on.
// RTCP: a sender (or receiver) report with a reception report block and the SDES CNAME every ~5 s, randomised as RFC
// 3550 6.3.1 says; a BYE as the call closes; the peer's reports read for what it received of ours (the record's
// analysis). No RTP for PARLEY_RTP_TIMEOUT_SEC while the peer should be sending ends the call (ended_by error).
// Everything per packet and per frame runs on preallocated buffers.
import { randomBytes } from 'node:crypto';
import type { AnsweredBy, ConversationClient, ConversationOrigin, LiveConversation } from '../conversation/host.js';
import { createDecoder, type Decoder } from '../media/codec.js';
import { JitterBuffer, JB_LOST, JB_NONE } from '../media/jitter-buffer.js';
import { DtmfDetector } from '../media/native/dtmf.js';
import { prefixView } from '../media/prefix-views.js';
import { DTMF_EVENTS, dtmfDigit, TelephoneEventReceiver, TelephoneEventSender } from '../media/rfc4733.js';
import { createRtpPacketView, decodeView, RtpSender, RTP_HEADER_BYTES } from '../media/rtp.js';
import type { NativeUdpSocket } from '../media/udp-native.js';
import type { Logger } from '../log.js';
import type { EndedBy, RtpAnalysis } from '../schemas/conversations.js';
import type { ServerEvent } from '../schemas/sts.js';
import type {
  CallHangupReason,
  CallMedia,
  CallMessage,
  CallSignalNotice,
  MediaAddress,
} from '../workers/worker-protocol.js';
import { transition, type CallInput, type CallState } from './call.fsm.js';
import { callCodec, encodedSilence, framesPerPacket, type CallCodec } from './call-media.js';
import { ReceptionStats, peerSummary } from './reception-stats.js';
import {
  createPeerRtcp,
  createReportBlock,
  delaySinceUnits,
  readCompound,
  roundTripMs,
  rtcpIntervalMs,
  sdesPacket,
  writeBye,
  writeReport,
  type SenderInfo,
} from './rtcp.js';
import type { RtpEndpoint } from './rtp-endpoint.js';
import type { TransferLeg } from './bridge.js';
import type { CallTransfer, WorkerTransfers } from './worker-transfer.js';
import type {
  PhoneTransferHooks,
  PhoneTransferRequest,
  PhoneTransferResult,
} from '../conversation/tools/phone-transfer.js';
import { VoicemailDetection } from './voicemail-detection.js';

export type CallAssigned = Extract<CallMessage, { type: 'call_assigned' }>;

/** In-band DTMF: digits the native detector reports per frame (a few at most: a 40 ms tone and a 40 ms pause each). */
const INBAND_DIGITS_PER_FRAME = 8;
/** RFC 3550 6.5.1 / RFC 7022: a random CNAME per call, 96 bits, base64. */
const CNAME_BYTES = 12;

/** What became of received packets (counters, logged when the call closes). */
export interface CallCounters {
  rtp: number;
  malformed: number;
  unknownPayloadType: number;
  wrongSource: number;
  late: number;
  dtmf: number;
  rtcp: number;
  rtcpRejected: number;
}

export interface CallSessionDeps {
  endpoint: RtpEndpoint;
  /** Monotonic ms (performance.now): arrivals, the jitter buffer, RTCP and the inactivity timeout. */
  now(): number;
  /** Ms since the Unix epoch: RTCP's NTP timestamps. */
  wallNow(): number;
  /** PARLEY_RTP_TIMEOUT_SEC in ms. */
  rtpTimeoutMs: number;
  log: Logger;
  newConversation(client: ConversationClient, origin: ConversationOrigin): LiveConversation;
  /** The call closed (ports closed): main is told, the worker forgets it. `started`: a record exists. */
  closed(session: CallSession, endedBy: EndedBy, started: boolean): void;
  /** The worker's phone transfers (worker-transfer.ts); absent: the call cannot be transferred. */
  transfers?: WorkerTransfers;
  /** What main carries out in SIP for the call (keys as SIP INFO); absent: nothing to send them with. */
  signal?(notice: CallSignalNotice): void;
  random?(): number;
}

export class CallSession implements ConversationClient {
  state: CallState = 'assigned';
  readonly callId: string;
  readonly conversationId: string;
  readonly orgId: string;
  readonly endpoint: RtpEndpoint;
  readonly counters: CallCounters = {
    rtp: 0,
    malformed: 0,
    unknownPayloadType: 0,
    wrongSource: 0,
    late: 0,
    dtmf: 0,
    rtcp: 0,
    rtcpRejected: 0,
  };
  private conv: LiveConversation | null = null;
  private media: CallMedia;
  private readonly codec: CallCodec;
  readonly log: Logger;
  /** A phone transfer under way, and its new leg once opened (relaying once bridged): worker-transfer.ts. */
  transfer: CallTransfer | null = null;
  leg: TransferLeg | null = null;
  private readonly pushToAgent = (bytes: Uint8Array): void => this.conv?.pushAudio(bytes);
  private readonly random: () => number;

  // ---- in ----
  private readonly view = createRtpPacketView();
  private readonly jb: JitterBuffer;
  private readonly stats: ReceptionStats;
  private readonly keys = new TelephoneEventReceiver();
  /** 20 ms frames in the last packet released (what one lost packet is worth). */
  private lastFrames = 1;
  private lastRtpAtMs = 0;
  private readonly onRtpBatch = (count: number, socket: NativeUdpSocket): void => this.receiveRtp(count, socket);
  private readonly onRtcpBatch = (count: number, socket: NativeUdpSocket): void => this.receiveRtcp(count, socket);
  /** Answering-machine detection from the answer on (call_assigned.voicemailDetection), until it settles. */
  private voicemail: {
    detection: VoicemailDetection;
    decoder: Decoder;
    pcm: Int16Array;
    views: Map<number, Int16Array>;
  } | null = null;
  /** In-band DTMF (no telephone-event negotiated, G.711): made when first needed. */
  private inband: {
    detector: DtmfDetector;
    decoder: Decoder;
    pcm: Int16Array;
    views: Map<number, Int16Array>;
    digits: Uint8Array;
  } | null = null;

  // ---- out ----
  private readonly sender: RtpSender;
  private readonly firstSequence: number;
  private sendPayloadType: number;
  private events: TelephoneEventSender | null = null;
  private readonly silence: Uint8Array;
  private framesPerPacket: number;
  private framesInPacket = 0;
  private payloadBytes = 0;
  /** The conversation's frame of this clock frame is in (one per frame). */
  private slotTaken = false;
  /** The next packet starts a run of transmission (marker bit). */
  private markerPending = true;
  /** RTP is sent: answered, a peer known, the peer receiving (not hold). */
  private sends = false;
  packetsSent = 0;
  private octetsSent = 0;

  // ---- RTCP ----
  private nextReportAtMs = Number.POSITIVE_INFINITY;
  private sentSinceReport = false;
  private sentBeforeLastReport = false;
  private readonly sdes: Uint8Array;
  private readonly block = createReportBlock();
  private readonly senderInfo: SenderInfo = { wallMs: 0, rtpTimestamp: 0, packets: 0, octets: 0 };
  private readonly peer = createPeerRtcp();
  /** The peer's last report block about our stream. */
  private readonly peerBlock = createReportBlock();
  private havePeerBlock = false;
  private lastSrMiddle = 0;
  private lastSrAtMs = 0;
  reportsSent = 0;

  /** Where the call came from (the record's origin). */
  get origin(): CallAssigned['origin'] {
    return this.assigned.origin;
  }

  /** Its inbound RTP so far: packets received and dropped as late, loss (RFC 3550 A.3) and jitter (A.8). */
  get reception(): { received: number; late: number; lost: number; jitterMs: number } {
    return {
      received: this.counters.rtp,
      late: this.counters.late,
      lost: Math.max(0, this.stats.lost),
      jitterMs: this.stats.jitterMs,
    };
  }

  constructor(
    private readonly assigned: CallAssigned,
    private readonly deps: CallSessionDeps,
  ) {
    this.callId = assigned.callId;
    this.conversationId = assigned.conversationId;
    this.orgId = assigned.agent.orgId;
    this.endpoint = deps.endpoint;
    this.media = assigned.media;
    this.codec = callCodec(assigned.media.codec);
    this.log = deps.log.child({ callId: assigned.callId, conversationId: assigned.conversationId });
    this.random = deps.random ?? Math.random;
    const c = this.codec;
    this.jb = new JitterBuffer({
      clockRate: c.clockRate,
      ticksPerFrame: c.ticksPerFrame,
      maxPayloadBytes: c.maxPayloadBytes,
      release: 'on_arrival',
    });
    this.stats = new ReceptionStats(c.clockRate);
    this.sendPayloadType = assigned.media.payloadType;
    this.sender = new RtpSender({ payloadType: assigned.media.payloadType });
    this.firstSequence = this.sender.header.sequenceNumber;
    this.events = this.eventSender(assigned.media.telephoneEventPayloadType);
    this.silence = encodedSilence(c.format);
    this.framesPerPacket = framesPerPacket(assigned.media);
    this.sdes = sdesPacket(this.sender.header.ssrc, randomBytes(CNAME_BYTES).toString('base64'));
    this.endpoint.setRemote(assigned.remote);
    this.endpoint.rtp.onBatch(this.onRtpBatch);
    this.endpoint.rtcp.onBatch(this.onRtcpBatch);
    this.updateInband();
  }

  private step(input: CallInput): boolean {
    const next = transition(this.state, input);
    if (next === null) return false;
    this.state = next;
    return true;
  }

  get callInfo(): CallAssigned['callInfo'] {
    return this.assigned.callInfo;
  }

  get codecName(): CallMedia['codec'] {
    return this.codec.codec;
  }

  // ---- main's messages ----

  /** call_start: the call is answered; the conversation starts and media flows. */
  start(): void {
    if (!this.step('start'))
      return this.log.warn({ state: this.state }, 'call_start for a call not waiting for it: ignored');
    const now = this.deps.now();
    this.lastRtpAtMs = now;
    this.nextReportAtMs = now + rtcpIntervalMs(true, this.random());
    this.updateSending();
    const a = this.assigned;
    const answeredBy = a.voicemailDetection === true ? this.startVoicemailDetection() : null;
    const conv = this.deps.newConversation(this, { orgId: a.agent.orgId, origin: a.origin, callInfo: a.callInfo });
    this.conv = conv;
    void conv.ended.then((endedBy) => this.conversationEnded(endedBy));
    void conv.start({
      kind: 'call',
      call: {
        conversationId: a.conversationId,
        agent: a.agent,
        format: this.codec.format,
        configurationEndpoint: a.configurationEndpoint,
        overrides: a.overrides,
        listenOnly: a.listenOnly,
        answeredBy,
      },
    });
  }

  /** call_media_update: a re-INVITE (new address, hold or resume) or an outbound call's answer. */
  updateMedia(remote: MediaAddress | null, media: CallMedia): void {
    if (this.state === 'closed') return;
    const sameCodec = media.codec === this.codec.codec;
    if (!sameCodec) {
      // The conversation's formats are fixed at its start: main answers re-INVITEs with the call's codec.
      this.log.error(
        { codec: media.codec, callCodec: this.codec.codec },
        "call_media_update changes the codec: kept the call's",
      );
    } else {
      this.sendPayloadType = media.payloadType;
    }
    // A packet under way goes out as it is before the packetization or the destination changes.
    if (this.framesInPacket > 0) this.completePacket();
    try {
      this.endpoint.setRemote(remote);
    } catch (err) {
      this.log.error({ err, remote }, 'call_media_update: not an IPv4 media address; nothing is sent until a new one');
      this.endpoint.setRemote(null);
    }
    const wasWatching = this.watchesInactivity;
    if (media.telephoneEventPayloadType !== this.media.telephoneEventPayloadType)
      this.events = this.eventSender(media.telephoneEventPayloadType);
    this.media = {
      ...media,
      codec: this.codec.codec,
      payloadType: sameCodec ? media.payloadType : this.media.payloadType,
    };
    this.framesPerPacket = framesPerPacket(this.media);
    this.updateInband();
    this.updateSending();
    if (!wasWatching && this.watchesInactivity) this.lastRtpAtMs = this.deps.now();
  }

  /** call_hangup. */
  hangup(reason: CallHangupReason): void {
    if (this.state === 'assigned') {
      this.step('hangup');
      this.release(reason === 'cancel' || reason === 'bye' ? 'user' : 'error', false);
      return;
    }
    this.end(reason === 'bye' || reason === 'cancel' ? 'user' : 'error', `call_hangup ${reason}`);
  }

  /** call_dtmf: keys of a SIP INFO. */
  dtmfInfo(digits: string): void {
    const conv = this.conv;
    if (this.state !== 'live' || conv === null) return;
    let keys = '';
    for (const d of digits.toUpperCase()) if (DTMF_EVENTS.includes(d)) keys += d;
    if (keys.length !== digits.length)
      this.log.warn({ digits }, 'SIP INFO carried characters that are not DTMF keys: dropped');
    if (keys === '') return;
    this.counters.dtmf += keys.length;
    conv.pushDtmf(keys);
  }

  /** Ends the conversation (its record is saved, then the call closes). */
  end(endedBy: EndedBy, why: string): void {
    if (!this.step('end')) return;
    this.sends = false;
    this.log.info({ endedBy, why }, 'ending the call');
    this.deps.transfers?.callEnding(this);
    void this.conv!.end(endedBy);
  }

  // ---- the conversation's client ----

  send(event: ServerEvent): void {
    // The keypad tool's keys (built_in_keypad_input) go to the peer; the STS events have no one to read them here.
    if (event.type === 'dtmf') this.sendDigits(event.digits);
  }

  sendAudio(frame: Uint8Array, _text: string): boolean {
    // Not sending (hold, ending): the peer hears nothing of it, and the conversation plays on.
    if (!this.sends) return true;
    // Bridged: the agent is heard by both parties while it listens, by nobody once it left.
    if (this.leg !== null && this.leg.bridged) return this.leg.fromAgent(frame);
    // One frame per clock frame, none while telephone events play: offered again on the next tick.
    if (this.slotTaken || (this.events !== null && this.events.active)) return false;
    this.slotTaken = true;
    this.append(frame);
    return true;
  }

  transferCall(request: PhoneTransferRequest, hooks: PhoneTransferHooks): Promise<PhoneTransferResult> {
    const transfers = this.deps.transfers;
    if (!transfers)
      return Promise.resolve({
        outcome: 'failed',
        phone_number: request.phoneNumber,
        reason: 'this worker does not transfer calls',
        attempts: 0,
      });
    return transfers.start(this, request, hooks);
  }

  close(): void {
    // The record is saved; the call closes once the conversation's `ended` settles (conversationEnded).
  }

  mediaStats(): RtpAnalysis {
    return {
      inbound: this.stats.summary(),
      outbound: this.havePeerBlock ? peerSummary(this.peerBlock, this.firstSequence, this.codec.clockRate) : null,
    };
  }

  // ---- the clock ----

  /**
   * Once per pacing-clock frame, after every conversation's tick (WorkerCalls.frameEnd): gaps past their deadline are
   * concealed, this frame's packet is completed (silence where the conversation sent nothing), a report is sent when
   * due, and RTP inactivity is checked. The packets wait in the send tables for the worker's one send.
   */
  frame(now: number): void {
    if (this.state !== 'live') return;
    if (this.conv !== null) this.drain(now);
    const leg = this.leg;
    if (leg !== null && leg.bridged) {
      // The bridge's frame for the caller takes the conversation's slot (the agent's speech is mixed into it).
      const out = leg.frame(leg.listening ? this.pushToAgent : null);
      if (this.sends && !this.slotTaken) {
        this.slotTaken = true;
        this.append(out);
      }
    }
    this.outboundFrame();
    if (now >= this.nextReportAtMs) this.report(now);
    if (this.watchesInactivity && now - this.lastRtpAtMs > this.deps.rtpTimeoutMs) {
      this.log.warn(
        { silentMs: Math.round(now - this.lastRtpAtMs), timeoutMs: this.deps.rtpTimeoutMs },
        'no RTP from the peer within PARLEY_RTP_TIMEOUT_SEC',
      );
      this.end('error', 'RTP inactivity');
    }
  }

  // ---- in ----

  private receiveRtp(count: number, socket: NativeUdpSocket): void {
    const now = this.deps.now();
    const slots = this.endpoint.rtpSlots;
    for (let i = 0; i < count; i++) {
      if (socket.rxTruncated(i)) {
        this.counters.malformed++;
        continue;
      }
      this.packet(slots[i], socket.rxLength(i), socket.rxAddress(i), socket.rxPort(i), now);
    }
  }

  private packet(buf: Uint8Array, length: number, address: number, port: number, now: number): void {
    const v = this.view;
    if (decodeView(buf, v, length) !== 'ok') {
      this.counters.malformed++;
      return;
    }
    const pt = v.payloadType;
    const isEvent = pt === this.media.telephoneEventPayloadType;
    if (pt !== this.media.payloadType && !isEvent) {
      this.counters.unknownPayloadType++;
      return;
    }
    if (!this.endpoint.admitRtp(address, port)) {
      this.counters.wrongSource++;
      return;
    }
    this.counters.rtp++;
    this.lastRtpAtMs = now;
    if (v.ssrc !== this.stats.ssrc && this.stats.ssrc !== -1) {
      // RFC 3550 8.2: another SSRC is another source (a transfer, a re-INVITE to another device): start afresh.
      this.jb.reset();
      this.keys.reset();
    }
    this.stats.update(v, now);
    const conv = this.conv;
    // Before the answer (or once ending), packets count but nobody listens.
    if (conv === null || this.state !== 'live') return;
    if (isEvent) {
      const code = this.keys.receive(buf, v.payloadOffset, v.payloadLength, v.timestamp);
      const digit = code >= 0 ? dtmfDigit(code) : undefined;
      if (digit !== undefined) {
        this.counters.dtmf++;
        conv.pushDtmf(digit);
      }
      return;
    }
    if (!this.jb.push(v, buf, now)) {
      this.counters.late++;
      return;
    }
    this.drain(now);
  }

  /** Releases what the jitter buffer has due: payloads to the conversation, lost packets concealed. */
  private drain(now: number): void {
    const conv = this.conv!;
    const jb = this.jb;
    for (;;) {
      const n = jb.pop(now);
      if (n === JB_NONE) return;
      if (n === JB_LOST) {
        for (let k = 0; k < this.lastFrames; k++) conv.pushLost();
        if (this.voicemail !== null) for (let k = 0; k < this.lastFrames; k++) this.voicemail.detection.pushLost();
        continue;
      }
      const at = jb.releasedOffset;
      const leg = this.leg;
      if (leg !== null && leg.bridged) {
        // Bridged: the caller's audio goes to the target (and to the agent mixed with the target's, leg.frame).
        leg.fromCaller(jb.store, at, n);
        continue;
      }
      conv.pushAudio(jb.store, at, n);
      const perFrame = this.codec.bytesPerFrame;
      this.lastFrames = perFrame > 0 ? Math.max(1, Math.round(n / perFrame)) : 1;
      if (this.inband !== null) this.detectInband(jb.store, at, n);
      if (this.voicemail !== null) this.feedVoicemail(jb.store, at, n);
    }
  }

  /**
   * The detection of who answered, on the callee's decoded audio from the answer (G.711 only: an opus call's audio
   * is not decoded here, and it settles `unknown` at once). Its promise settles however the call goes.
   */
  private startVoicemailDetection(): Promise<AnsweredBy> {
    const detection = new VoicemailDetection();
    if (this.codec.bytesPerFrame === 0) {
      detection.cancel();
      return detection.result;
    }
    const decoder = createDecoder(this.codec.format);
    this.voicemail = {
      detection,
      decoder,
      pcm: new Int16Array(decoder.maxSamples(this.codec.maxPayloadBytes)),
      views: new Map(),
    };
    void detection.result.then((outcome) => {
      this.log.info({ answeredBy: outcome }, 'answering-machine detection settled');
      this.voicemail = null;
    });
    return detection.result;
  }

  private feedVoicemail(buf: Uint8Array, at: number, n: number): void {
    const v = this.voicemail!;
    const samples = v.decoder.decodeInto(buf, n, v.pcm, at);
    v.detection.push(prefixView(v.views, v.pcm, samples));
  }

  private detectInband(buf: Uint8Array, at: number, n: number): void {
    const b = this.inband!;
    const samples = b.decoder.decodeInto(buf, n, b.pcm, at);
    const found = b.detector.process(prefixView(b.views, b.pcm, samples), b.digits);
    for (let i = 0; i < found; i++) {
      this.counters.dtmf++;
      // A one-character ASCII string: V8 hands out its cached single-character strings.
      this.conv!.pushDtmf(String.fromCharCode(b.digits[i]));
    }
  }

  /** In-band detection runs only while no telephone-event is negotiated, on G.711 (opus audio is not decoded here). */
  private updateInband(): void {
    const wanted = this.media.telephoneEventPayloadType === null && this.codec.bytesPerFrame > 0;
    if (wanted && this.inband === null) {
      const decoder = createDecoder(this.codec.format);
      this.inband = {
        detector: new DtmfDetector(8000),
        decoder,
        pcm: new Int16Array(decoder.maxSamples(this.codec.maxPayloadBytes)),
        views: new Map(),
        digits: new Uint8Array(INBAND_DIGITS_PER_FRAME),
      };
    } else if (!wanted && this.inband !== null) {
      this.inband.detector.destroy();
      this.inband = null;
    }
  }

  private receiveRtcp(count: number, socket: NativeUdpSocket): void {
    const now = this.deps.now();
    const slots = this.endpoint.rtcpSlots;
    const ourSsrc = this.sender.header.ssrc;
    for (let i = 0; i < count; i++) {
      if (socket.rxTruncated(i) || !this.endpoint.admitRtcp(socket.rxAddress(i), socket.rxPort(i))) {
        this.counters.rtcpRejected++;
        continue;
      }
      const p = readCompound(slots[i], socket.rxLength(i), ourSsrc, this.peer);
      if (!p.valid) {
        this.counters.rtcpRejected++;
        continue;
      }
      this.counters.rtcp++;
      if (p.senderReport) {
        this.lastSrMiddle = p.srNtpMiddle;
        this.lastSrAtMs = now;
      }
      if (p.aboutUs) {
        Object.assign(this.peerBlock, p.block);
        this.havePeerBlock = true;
      }
      if (p.bye) this.log.debug('the peer sent an RTCP BYE');
    }
  }

  // ---- out ----

  private get watchesInactivity(): boolean {
    return this.state === 'live' && this.endpoint.hasRemote && this.media.direction === 'sendrecv';
  }

  private updateSending(): void {
    const sends =
      this.state === 'live' &&
      this.endpoint.hasRemote &&
      (this.media.direction === 'sendrecv' || this.media.direction === 'recvonly');
    if (sends && !this.sends) this.markerPending = true;
    this.sends = sends;
  }

  private eventSender(payloadType: number | null): TelephoneEventSender | null {
    if (payloadType === null) return null;
    return new TelephoneEventSender(this.sender, {
      payloadType,
      clockRate: this.codec.clockRate,
      ticksPerPacket: this.codec.ticksPerFrame,
    });
  }

  private sendDigits(digits: string): void {
    // The tool's pauses (w, comma) are not kept: the digits go out one after another.
    let keys = '';
    for (const d of digits.toUpperCase()) if (DTMF_EVENTS.includes(d)) keys += d;
    if (keys === '') return;
    if (this.events !== null) return this.events.send(keys);
    // No telephone-event negotiated: main sends them as SIP INFO (application/dtmf-relay).
    if (this.deps.signal) return this.deps.signal({ type: 'call_dtmf_out', callId: this.callId, digits: keys });
    this.log.warn({ digits }, 'the keypad tool pressed keys, but the call negotiated no telephone-event: not sent');
  }

  private append(frame: Uint8Array): void {
    const at = RTP_HEADER_BYTES + this.payloadBytes;
    if (at + frame.length > this.endpoint.audioPacket.length) {
      this.log.error({ bytes: frame.length }, 'an audio frame larger than a packet holds: dropped');
      return;
    }
    this.endpoint.audioPacket.set(frame, at);
    this.payloadBytes += frame.length;
    this.framesInPacket++;
  }

  private outboundFrame(): void {
    const taken = this.slotTaken;
    this.slotTaken = false;
    const ticks = this.codec.ticksPerFrame;
    if (!this.sends) {
      // RFC 3550 5.1: the media clock runs on while nothing is sent (hold): the timestamps stay continuous.
      this.sender.advanceTimestamp(ticks);
      return;
    }
    const events = this.events;
    if (this.framesInPacket === 0 && events !== null && events.active) {
      // RFC 4733 2.5.1: one event packet per 20 ms; the stream's timestamp advances as for audio.
      const n = events.writeTick(this.endpoint.eventPacket);
      if (n > 0) {
        this.endpoint.queueEvent(n);
        this.counted(n - RTP_HEADER_BYTES);
      }
      this.sender.advanceTimestamp(ticks);
      return;
    }
    if (!taken) this.append(this.silence);
    if (this.framesInPacket >= this.framesPerPacket) this.completePacket();
  }

  private completePacket(): void {
    const frames = this.framesInPacket;
    this.sender.writeNext(this.endpoint.audioPacket, this.markerPending, this.sendPayloadType);
    this.markerPending = false;
    this.endpoint.queueAudio(RTP_HEADER_BYTES + this.payloadBytes);
    this.counted(this.payloadBytes);
    this.sender.advanceTimestamp(frames * this.codec.ticksPerFrame);
    this.framesInPacket = 0;
    this.payloadBytes = 0;
  }

  private counted(payloadBytes: number): void {
    this.packetsSent++;
    this.octetsSent += payloadBytes;
    this.sentSinceReport = true;
  }

  // ---- RTCP ----

  /** Builds our compound report (RFC 3550 6.1: SR or RR first, then SDES) at the start of the RTCP buffer. */
  private buildReport(now: number): number {
    const b = this.endpoint.rtcpPacket;
    // RFC 3550 6.4: a sender report while we sent RTP since the second-previous report; else a receiver report.
    let sender: SenderInfo | null = null;
    if (this.sentSinceReport || this.sentBeforeLastReport) {
      sender = this.senderInfo;
      sender.wallMs = this.deps.wallNow();
      // The timestamp of the frame going out now: the same instant as the NTP time, to a frame.
      sender.rtpTimestamp = this.sender.header.timestamp;
      sender.packets = this.packetsSent >>> 0;
      sender.octets = this.octetsSent >>> 0;
    }
    this.sentBeforeLastReport = this.sentSinceReport;
    this.sentSinceReport = false;
    let block = null;
    if (this.stats.reportInto(this.block)) {
      block = this.block;
      block.lastSr = this.lastSrMiddle;
      block.delaySinceLastSr = this.lastSrMiddle === 0 ? 0 : delaySinceUnits(now - this.lastSrAtMs);
    }
    let n = writeReport(b, 0, this.sender.header.ssrc, sender, block);
    b.set(this.sdes, n);
    n += this.sdes.length;
    return n;
  }

  private report(now: number): void {
    this.endpoint.queueRtcp(this.buildReport(now));
    this.reportsSent++;
    this.nextReportAtMs = now + rtcpIntervalMs(false, this.random());
  }

  // ---- ending ----

  private conversationEnded(endedBy: EndedBy): void {
    if (!this.step('ended')) return;
    this.release(endedBy, this.conv !== null && this.conv.id !== null);
  }

  /** Sends RTCP BYE (after the answer), closes the ports and tells the worker. */
  private release(endedBy: EndedBy, started: boolean): void {
    this.sends = false;
    this.deps.transfers?.callEnding(this);
    if (this.conv !== null && this.endpoint.hasRemote) {
      // RFC 3550 6.6: a BYE in a compound packet after a report, sent at once (the ports close now).
      const b = this.endpoint.rtcpPacket;
      this.endpoint.rtcpPending = 0;
      let n = this.buildReport(this.deps.now());
      n += writeBye(b, n, this.sender.header.ssrc);
      this.endpoint.queueRtcp(n);
      try {
        this.endpoint.sendRtcpNow();
      } catch (err) {
        this.log.warn({ err }, 'sending the RTCP BYE failed');
      }
    }
    this.endpoint.close();
    this.inband?.detector.destroy();
    this.inband = null;
    this.voicemail?.detection.cancel();
    this.voicemail = null;
    const peer = this.havePeerBlock ? { peerRoundTripMs: roundTripMs(this.peerBlock, this.deps.wallNow()) } : {};
    this.log.info(
      {
        endedBy,
        started,
        counters: this.counters,
        packetsSent: this.packetsSent,
        reportsSent: this.reportsSent,
        jitterBuffer: this.jb.stats,
        ...peer,
      },
      'call closed',
    );
    this.deps.closed(this, endedBy, started);
  }
}
