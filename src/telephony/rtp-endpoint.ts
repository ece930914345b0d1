// The two UDP sockets of one call (RFC 3550 11: RTP on an even port, RTCP on the next one), members of the worker's
// NativeUdpGroup, and where their packets go: the signalled address until the peer's first packet, then, by
// symmetric RTP (RFC 4961), the address and port that packet came from (from the signalled address, unless that
// is a NAT's inside address). Packets to send are built in place in the
// sockets' send buffers and entered in their send tables; the worker sends every call's tables of a clock frame
// together (WorkerCalls, one NativeUdpGroup.sendMany).
import { RTP_HEADER_BYTES } from '../media/rtp.js';
import { ipv4ToUint32, NativeUdpSocket, type NativeUdpGroup, type UdpIoError } from '../media/udp-native.js';
import type { MediaAddress } from '../workers/worker-protocol.js';
import { TELEPHONE_EVENT_PAYLOAD_BYTES } from '../media/rfc4733.js';

/** Datagrams a receive batch holds: 16 packets of 20 ms are a 320 ms stall of the event loop. */
const RTP_RX_SLOTS = 16;
/** RTCP comes every few seconds (RFC 3550 6.2): a few slots are plenty. */
const RTCP_RX_SLOTS = 4;
/** A compound report of ours (SR, one block, SDES, BYE) is about 100 octets; the peer's fit this too. */
const RTCP_SLOT_BYTES = 512;
/** Packets entered per socket between two sends: one audio or telephone-event packet per frame, with room. */
const TX_ENTRIES = 4;
/** RFC 768: port 0 is no port; a source claiming it cannot be answered. */
const NO_PORT = 0;
/**
 * IPv4 ranges behind which a peer's signalled address is not the one its packets come from (a NAT rewrites it):
 * RFC 1918 private and RFC 6598 shared address space, as [network, prefix length].
 */
const NAT_RANGES: ReadonlyArray<readonly [string, number]> = [
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['100.64.0.0', 10],
];
const NAT_MASKS = NAT_RANGES.map(([net, bits]) => ({
  net: ipv4ToUint32(net),
  mask: (0xffffffff << (32 - bits)) >>> 0,
}));

function behindNat(address: number): boolean {
  return NAT_MASKS.some(({ net, mask }) => (address & mask) >>> 0 === net);
}

/** Where a call's packets go, as rxMeta/txMeta words: an IPv4 address (uint32) and a port; port 0: nowhere yet. */
interface Destination {
  address: number;
  port: number;
}

export class RtpEndpoint {
  readonly rtp: NativeUdpSocket;
  readonly rtcp: NativeUdpSocket;
  /** Views of the receive rings' slots, made once: a packet is read through its slot's view. */
  readonly rtpSlots: Uint8Array[];
  readonly rtcpSlots: Uint8Array[];
  /** Where the packet being assembled (header + payload) and a telephone-event packet are built. */
  readonly audioPacket: Uint8Array;
  readonly eventPacket: Uint8Array;
  private readonly eventAt: number;
  /** Where our RTCP compound packets are built. */
  readonly rtcpPacket: Uint8Array;
  /** Entries in each send table since the last send. */
  rtpPending = 0;
  rtcpPending = 0;
  /** Packets not entered because a send table was full (never expected: the tables are sent every frame). */
  txOverflow = 0;
  private readonly signalled: Destination = { address: 0, port: NO_PORT };
  /** The signalled address is a NAT's inside one: the first source latches, wherever it is. */
  private signalledBehindNat = false;
  private readonly latched: Destination = { address: 0, port: NO_PORT };
  private readonly rtcpLatched: Destination = { address: 0, port: NO_PORT };

  private constructor(
    group: NativeUdpGroup,
    host: string,
    rtpPort: number,
    maxPayloadBytes: number,
    onError: (err: UdpIoError) => void,
  ) {
    const audioBytes = RTP_HEADER_BYTES + maxPayloadBytes;
    const eventBytes = RTP_HEADER_BYTES + TELEPHONE_EVENT_PAYLOAD_BYTES;
    this.rtp = NativeUdpSocket.open({
      host,
      port: rtpPort,
      group,
      slots: RTP_RX_SLOTS,
      txSlots: TX_ENTRIES,
      txBytes: audioBytes + eventBytes,
    });
    try {
      this.rtcp = NativeUdpSocket.open({
        host,
        port: rtpPort + 1,
        group,
        slots: RTCP_RX_SLOTS,
        slotBytes: RTCP_SLOT_BYTES,
        txSlots: TX_ENTRIES,
        txBytes: RTCP_SLOT_BYTES,
      });
    } catch (err) {
      this.rtp.close();
      throw err;
    }
    this.rtp.onError(onError);
    this.rtcp.onError(onError);
    this.rtpSlots = Array.from({ length: RTP_RX_SLOTS }, (_, i) =>
      this.rtp.rxData.subarray(this.rtp.rxOffset(i), this.rtp.rxOffset(i) + this.rtp.slotBytes),
    );
    this.rtcpSlots = Array.from({ length: RTCP_RX_SLOTS }, (_, i) =>
      this.rtcp.rxData.subarray(this.rtcp.rxOffset(i), this.rtcp.rxOffset(i) + this.rtcp.slotBytes),
    );
    this.audioPacket = this.rtp.txData.subarray(0, audioBytes);
    this.eventAt = audioBytes;
    this.eventPacket = this.rtp.txData.subarray(audioBytes, audioBytes + eventBytes);
    this.rtcpPacket = this.rtcp.txData;
  }

  /**
   * Binds `rtpPort` and `rtpPort + 1` on `host` in `group`. Throws UdpIoError (EADDRINUSE...) when either cannot be
   * bound (neither stays open then).
   */
  static open(
    group: NativeUdpGroup,
    host: string,
    rtpPort: number,
    maxPayloadBytes: number,
    onError: (err: UdpIoError) => void,
  ): RtpEndpoint {
    return new RtpEndpoint(group, host, rtpPort, maxPayloadBytes, onError);
  }

  /**
   * The peer's signalled media address (SDP c= and m=): packets go there until the peer's first packet latches
   * them; a new address or port starts latching over (a re-INVITE moving the media). Throws RangeError for an
   * address that is not IPv4 (the sockets are IPv4).
   */
  setRemote(remote: MediaAddress | null): void {
    const address = remote ? ipv4ToUint32(remote.address) : 0;
    const port = remote ? remote.port : NO_PORT;
    if (address === this.signalled.address && port === this.signalled.port) return;
    this.signalled.address = address;
    this.signalled.port = port;
    this.signalledBehindNat = behindNat(address);
    this.latched.port = NO_PORT;
    this.rtcpLatched.port = NO_PORT;
  }

  /** A peer is known: packets have somewhere to go. */
  get hasRemote(): boolean {
    return this.signalled.port !== NO_PORT;
  }

  get isLatched(): boolean {
    return this.latched.port !== NO_PORT;
  }

  /**
   * Symmetric RTP (RFC 4961): whether an RTP packet of a negotiated payload type from address:port is the peer's.
   * Before the first one, it latches the call to its source, if a peer was signalled and the source has a port
   * (every source is IPv4, like the signalled address: the socket receives IPv4 only); after, only that source is,
   * and the latched address sending without a source port: RFC 768 makes the source port optional (zero when
   * unused), as SIPp's replayed telephone-event captures come. Such a packet never moves the latch.
   * The source must have the signalled address (its port may differ: a NAT may rewrite it), unless that address is
   * a NAT's inside one: otherwise anyone sending to the call's port first would take its audio both ways.
   */
  admitRtp(address: number, port: number): boolean {
    const l = this.latched;
    if (l.port !== NO_PORT) return address === l.address && (port === l.port || port === NO_PORT);
    if (this.signalled.port === NO_PORT || port === NO_PORT) return false;
    if (address !== this.signalled.address && !this.signalledBehindNat) return false;
    l.address = address;
    l.port = port;
    return true;
  }

  /** The same for RTCP: latched to the first report from the RTP peer's address (or the signalled one before it). */
  admitRtcp(address: number, port: number): boolean {
    const l = this.rtcpLatched;
    if (l.port !== NO_PORT) return address === l.address && port === l.port;
    if (this.signalled.port === NO_PORT || port === NO_PORT) return false;
    const peer = this.latched.port !== NO_PORT ? this.latched.address : this.signalled.address;
    if (address !== peer) return false;
    l.address = address;
    l.port = port;
    return true;
  }

  /** Enters the packet built in audioPacket[0, length) for the next send. */
  queueAudio(length: number): void {
    this.queueRtp(0, length);
  }

  /** Enters the telephone-event packet built in eventPacket[0, length) for the next send. */
  queueEvent(length: number): void {
    this.queueRtp(this.eventAt, length);
  }

  private queueRtp(offset: number, length: number): void {
    const d = this.latched.port !== NO_PORT ? this.latched : this.signalled;
    if (d.port === NO_PORT) return;
    if (this.rtpPending === TX_ENTRIES) {
      this.txOverflow++;
      return;
    }
    this.rtp.setTx(this.rtpPending++, offset, length, d.address, d.port);
  }

  /** Enters the RTCP packet built in rtcpPacket[0, length) for the next send. */
  queueRtcp(length: number): void {
    let address: number;
    let port: number;
    if (this.rtcpLatched.port !== NO_PORT) {
      address = this.rtcpLatched.address;
      port = this.rtcpLatched.port;
    } else if (this.signalled.port !== NO_PORT) {
      // RFC 3550 11: RTCP goes to the port after the RTP one (no a=rtcp, RFC 3605, is taken).
      address = this.signalled.address;
      port = this.signalled.port + 1;
    } else {
      return;
    }
    if (this.rtcpPending === TX_ENTRIES) {
      this.txOverflow++;
      return;
    }
    this.rtcp.setTx(this.rtcpPending++, 0, length, address, port);
  }

  /** Sends what is entered in the RTCP table now, outside the worker's frame send (the BYE as the call closes). */
  sendRtcpNow(): void {
    if (this.rtcpPending === 0) return;
    const n = this.rtcpPending;
    this.rtcpPending = 0;
    this.rtcp.send(n);
  }

  /**
   * Appends this endpoint's sockets with entries to the send arrays of a group send (from index n) and clears its
   * counts; returns the next free index.
   */
  collect(ids: Uint32Array, counts: Uint32Array, n: number): number {
    if (this.rtpPending > 0) {
      ids[n] = this.rtp.groupId;
      counts[n++] = this.rtpPending;
      this.rtpPending = 0;
    }
    if (this.rtcpPending > 0) {
      ids[n] = this.rtcp.groupId;
      counts[n++] = this.rtcpPending;
      this.rtcpPending = 0;
    }
    return n;
  }

  close(): void {
    this.rtp.close();
    this.rtcp.close();
  }
}
