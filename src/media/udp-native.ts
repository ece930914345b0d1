// Batched UDP I/O for RTP through the native addon: recvmmsg/sendmmsg endpoints (native/src/udp_io.h) and, for a
// worker's many call sockets, io_uring (native/src/udp_ring.h). Linux only: elsewhere the addon is built without
// them, and opening a socket or group throws UdpIoError ENOSYS (NATIVE_UDP_AVAILABLE tells beforehand).
//
// RTP sockets live in the addon because node:dgram costs a kernel entry and a JavaScript object per packet
// (bench/results/udp-io.json). One NativeUdpSocket per RTP port, i.e. per call stream: SDP gives each stream its
// own port and symmetric RTP needs packets to leave from that same port.
//
// A worker's sockets share one NativeUdpGroup. Its io_uring backend (the default where the kernel allows it)
// arms one multishot receive per socket on the group's ring and sends every socket's packets of a tick with one
// io_uring_enter (group.sendMany): the kernel is entered a few times per loop iteration, not once per packet, and
// one crossing into JavaScript delivers every socket that received. Where io_uring is missing or blocked (a
// container's seccomp profile) the group falls back to the poll backend: one uv_poll and recvmmsg per socket, one
// sendmmsg per socket, the same dispatch.
//
// SharedUdpSocket (below) is the other layout: ONE socket for all of a worker's calls, received packets
// demultiplexed by source address:port in user space (UdpPeerTable), each sent packet carrying its destination.
// It costs the gateway less CPU per packet (bench/results/udp-shared*.json), but whether calls share a port is a
// signalling decision (SDP would advertise one port per worker; NAT latching needs another key than the local
// port; one flooded socket drops every call's packets), so NativeUdpSocket per call stays the default.
//
// Shared buffers, no per-packet JS objects:
// - receive ring: `slots` slots of `slotBytes` bytes in rxData; packet i of a batch starts at i * slotBytes and
//   its rxMeta words are [length, IPv4 address as uint32, port, flags (1 = truncated)]. The ring is reused by the
//   next batch: read (or copy) the packets inside the onBatch callback.
// - send table: write payloads anywhere in txData and, per packet i, txMeta words [offset, length, address, port];
//   then send(count). If the kernel's send buffer is full (EAGAIN) the packet is dropped and counted
//   (stats().txDropped): RTP is real time, a late packet is worth less than a lost one.
// IPv4 only. Errors from the kernel are UdpIoError with the errno name as `code`; misuse (wrong sizes, closed
// socket) is a RangeError / TypeError / UdpIoError('EBADF').
import { constants } from 'node:os';
import { nativeAddon } from './native/addon.js';

/** Words per rxMeta / txMeta entry. */
export const UDP_META_WORDS = 4;
/** rxMeta flag: the datagram was longer than slotBytes and was cut. */
export const UDP_FLAG_TRUNCATED = 1;
/** Ethernet MTU: an RTP packet (RFC 3550) over UDP/IPv4 on a LAN fits 1500 bytes. */
export const DEFAULT_SLOT_BYTES = 1500;
/** At 50 packets/s per stream a batch is rarely more than a few packets; 16 covers a 300 ms stall. */
export const DEFAULT_RX_SLOTS = 16;
export const DEFAULT_TX_SLOTS = 8;
/** io_uring sends per submission: a tick of 4096 calls in one io_uring_enter. */
export const DEFAULT_GROUP_SEND_ENTRIES = 4096;
/** Linux UIO_MAXIOV caps sendmmsg's vector; the addon checks it too. */
export const MAX_BATCH = 1024;

/** An opaque native UDP endpoint (an External); only NativeUdpSocket creates it. */
export type UdpHandle = { readonly __udpHandle: unique symbol };
type GroupHandle = { readonly __udpGroupHandle: unique symbol };
/** Words per group ready entry: [socket id, count, errno]. */
const GROUP_WORDS = 3;

/** A socket error from the kernel (or use after close), named after errno. */
export class UdpIoError extends Error {
  override readonly name = 'UdpIoError';
  constructor(
    message: string,
    /** errno name, e.g. 'EADDRINUSE' */
    readonly code: string,
    /** negative errno, as libuv and Node report it */
    readonly errno: number,
    readonly syscall: string,
    /** for send errors: the packet that failed (the ones before it were sent) */
    readonly index?: number,
    /** for sendMany errors: the socket whose send failed */
    readonly handleIndex?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

interface NativeErrno extends Error {
  code: string;
  errno: number;
  syscall: string;
  index?: number;
  handleIndex?: number;
}

interface UdpAddon {
  udpOpen(
    host: string,
    port: number,
    rxData: Uint8Array,
    rxMeta: Uint32Array,
    slotBytes: number,
    txData: Uint8Array,
    txMeta: Uint32Array,
    onBatch: ((count: number, err?: NativeErrno) => void) | GroupHandle,
    rcvbufBytes?: number,
    sndbufBytes?: number,
    groupId?: number,
  ): UdpHandle;
  udpGroupCreate(
    ready: Uint32Array,
    onReady: (n: number) => void,
    backend: number,
    payloadBytes: number,
    sendEntries: number,
    receiveBuffers: number,
    fixedFiles: boolean,
  ): GroupHandle;
  udpGroupBackend(group: GroupHandle): UdpGroupBackend;
  udpGroupSendMany(group: GroupHandle, ids: Uint32Array, counts: Uint32Array, sent: Uint32Array, n: number): void;
  udpGroupClose(group: GroupHandle): void;
  udpSend(handle: UdpHandle, count: number): number;
  udpSendMany(handles: readonly UdpHandle[], counts: Uint32Array, sent: Uint32Array): void;
  udpLocalPort(handle: UdpHandle): number;
  udpStats(handle: UdpHandle, out: Float64Array): void;
  udpClose(handle: UdpHandle): void;
}

const addon = nativeAddon() as UdpAddon;

/** Whether this build of the addon has the UDP endpoints: on Linux only (recvmmsg, sendmmsg, io_uring, eventfd). */
export const NATIVE_UDP_AVAILABLE: boolean = typeof (addon as Partial<UdpAddon>).udpOpen === 'function';

/** Throws UdpIoError ENOSYS where the addon was built without the UDP endpoints. */
function requireNativeUdp(): void {
  if (!NATIVE_UDP_AVAILABLE) {
    throw new UdpIoError(
      `native UDP I/O is Linux-only (recvmmsg, sendmmsg, io_uring); not available on ${process.platform}`,
      'ENOSYS',
      -constants.errno.ENOSYS,
      'udp',
    );
  }
}

function isNativeErrno(err: unknown): err is NativeErrno {
  return (
    err instanceof Error &&
    typeof (err as NativeErrno).code === 'string' &&
    typeof (err as NativeErrno).errno === 'number'
  );
}

/** Native errno errors become UdpIoError; anything else (TypeError, RangeError) is rethrown as is. */
function translate(err: unknown): never {
  if (isNativeErrno(err)) {
    throw new UdpIoError(err.message, err.code, err.errno, err.syscall, err.index, err.handleIndex, { cause: err });
  }
  throw err;
}

/** '192.0.2.1' -> 0xc0000201 (host order, as in rxMeta/txMeta). */
export function ipv4ToUint32(address: string): number {
  const parts = address.split('.');
  if (parts.length !== 4) throw new RangeError(`not an IPv4 address: ${address}`);
  let n = 0;
  for (const p of parts) {
    const b = Number(p);
    if (!/^\d{1,3}$/.test(p) || b > 255) throw new RangeError(`not an IPv4 address: ${address}`);
    n = n * 256 + b;
  }
  return n;
}

export function uint32ToIpv4(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

export interface NativeUdpOptions {
  host: string;
  /** 0 for any free port */
  port: number;
  /** receive ring slots (max datagrams per batch) */
  slots?: number;
  slotBytes?: number;
  /** send table entries (max packets per send) */
  txSlots?: number;
  /** send buffer size; default txSlots x slotBytes */
  txBytes?: number;
  /** kernel receive buffer (SO_RCVBUF) in bytes; default: the system's (net.core.rmem_default) */
  recvBufferBytes?: number;
  /** kernel send buffer (SO_SNDBUF) in bytes; default: the system's */
  sendBufferBytes?: number;
  /** receive through this group's per-iteration dispatch instead of a callback per socket */
  group?: NativeUdpGroup;
}

const ERRNO_NAMES = new Map<number, string>(Object.entries(constants.errno).map(([name, n]) => [n, name]));

/** How a group's sockets reach the kernel: see the file header. */
export type UdpGroupBackend = 'io_uring' | 'poll';
const BACKEND_CODES = { auto: 0, io_uring: 1, poll: 2 } as const satisfies Record<UdpGroupBackend | 'auto', number>;

export interface NativeUdpGroupOptions {
  /** 'auto' (default): io_uring where the kernel allows it, else poll. 'io_uring' fails where it cannot. */
  backend?: UdpGroupBackend | 'auto';
  /** io_uring: largest datagram received whole (longer ones are cut and flagged truncated); default 1500 */
  payloadBytes?: number;
  /** io_uring: sends submitted per io_uring_enter (more are submitted in several); default 4096 */
  sendEntries?: number;
  /** io_uring: provided receive buffers shared by the members (rounded up to a power of two, at most 32768);
   *  default 4 per member, at least 256. A shared socket needs about a loop turn's packets of all its calls. */
  receiveBuffers?: number;
  /** io_uring: register the members' sockets with the rings (IORING_REGISTER_FILES), so a request does not look
   *  its descriptor up (fget/fput) each time; default false (bench/results/udp-shared.json) */
  fixedFiles?: boolean;
}

/**
 * One receive dispatch for many sockets (a worker's RTP ports): after each event-loop poll phase, one crossing
 * from C++ delivers every socket that received, and each socket's onBatch listener runs. Capacity is fixed at
 * creation (one ready entry per socket). Close the group after its sockets.
 */
export class NativeUdpGroup {
  readonly capacity: number;
  private readonly handle: GroupHandle;
  private readonly ready: Uint32Array;
  private readonly sockets: Array<NativeUdpSocket | undefined>;
  private readonly freeIds: number[] = [];
  /** ids freed during a dispatch: reused only after it, so a later entry of that dispatch cannot reach a newcomer */
  private readonly releasedIds: number[] = [];
  private dispatching = false;
  private closed = false;
  /** Crossings from C++ so far (each delivers every socket that received in one loop iteration). */
  dispatches = 0;

  /** Which backend serves this group (see the file header). */
  readonly backend: UdpGroupBackend;

  constructor(capacity: number, options: NativeUdpGroupOptions = {}) {
    requireNativeUdp();
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('group capacity must be a positive integer');
    this.capacity = capacity;
    this.ready = new Uint32Array(capacity * GROUP_WORDS);
    this.sockets = new Array<NativeUdpSocket | undefined>(capacity);
    for (let id = capacity - 1; id >= 0; id--) this.freeIds.push(id);
    try {
      this.handle = addon.udpGroupCreate(
        this.ready,
        (n) => this.dispatch(n),
        BACKEND_CODES[options.backend ?? 'auto'],
        options.payloadBytes ?? DEFAULT_SLOT_BYTES,
        options.sendEntries ?? DEFAULT_GROUP_SEND_ENTRIES,
        options.receiveBuffers ?? 0,
        options.fixedFiles ?? false,
      );
    } catch (err) {
      translate(err);
    }
    this.backend = addon.udpGroupBackend(this.handle);
  }

  /**
   * Sends the tables of members ids[0..n) (NativeUdpSocket.groupId) in one crossing: sent[i] = packets sent by
   * ids[i]. With io_uring all of them go to the kernel in one io_uring_enter. Errors as NativeUdpSocket.sendMany
   * (handleIndex: the position in ids).
   */
  sendMany(ids: Uint32Array, counts: Uint32Array, sent: Uint32Array, n = ids.length): void {
    try {
      addon.udpGroupSendMany(this.handle, ids, counts, sent, n);
    } catch (err) {
      translate(err);
    }
  }

  private dispatch(n: number): void {
    this.dispatches++;
    const r = this.ready;
    this.dispatching = true;
    try {
      this.deliverAll(r, n);
    } finally {
      this.dispatching = false;
      while (this.releasedIds.length > 0) this.freeIds.push(this.releasedIds.pop()!);
    }
  }

  private deliverAll(r: Uint32Array, n: number): void {
    for (let i = 0; i < n; i++) {
      const w = i * GROUP_WORDS;
      const socket = this.sockets[r[w]];
      // A socket closed earlier in this same dispatch has nothing more to deliver.
      if (socket === undefined || socket.isClosed) continue;
      const count = r[w + 1];
      const errno = r[w + 2];
      // A batch and then an error can share an entry (io_uring: packets, then the receive failed).
      if (count > 0 || errno === 0) socket.deliver(count, undefined);
      if (errno !== 0 && !socket.isClosed) {
        const code = ERRNO_NAMES.get(errno) ?? `ERRNO_${errno}`;
        socket.deliver(0, { name: 'Error', message: `receive ${code}`, code, errno: -errno, syscall: 'recvmsg' });
      }
    }
  }

  /** @internal NativeUdpSocket's side of membership. */
  attach(socket: NativeUdpSocket): { handle: GroupHandle; id: number } {
    if (this.closed) throw new UdpIoError('UDP group is closed', 'EBADF', -constants.errno.EBADF, 'udp (group closed)');
    const id = this.freeIds.pop();
    if (id === undefined) throw new RangeError(`UDP group is full (${this.capacity} sockets)`);
    this.sockets[id] = socket;
    return { handle: this.handle, id };
  }

  /** @internal */
  detach(id: number): void {
    if (this.sockets[id] === undefined) return;
    this.sockets[id] = undefined;
    (this.dispatching ? this.releasedIds : this.freeIds).push(id);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    addon.udpGroupClose(this.handle);
  }
}

export interface UdpStats {
  rxPackets: number;
  rxBatches: number;
  rxTruncated: number;
  txPackets: number;
  /** dropped because the socket send buffer was full (EAGAIN) */
  txDropped: number;
  /** received while no onBatch listener was set */
  rxUnhandled: number;
}

export type BatchListener = (count: number, socket: NativeUdpSocket) => void;
export type ErrorListener = (err: UdpIoError) => void;

export class NativeUdpSocket {
  readonly handle: UdpHandle;
  readonly host: string;
  readonly port: number;
  readonly slotBytes: number;
  readonly rxData: Uint8Array;
  readonly rxMeta: Uint32Array;
  readonly txData: Uint8Array;
  readonly txMeta: Uint32Array;
  private batchListener: BatchListener | undefined;
  private errorListener: ErrorListener | undefined;
  private unhandled = 0;
  private closed = false;
  private readonly statsOut = new Float64Array(5);
  private readonly group: NativeUdpGroup | undefined;
  /** This socket's id in its group (for NativeUdpGroup.sendMany); -1 without a group. */
  readonly groupId: number;

  private constructor(options: NativeUdpOptions) {
    requireNativeUdp();
    const slots = options.slots ?? DEFAULT_RX_SLOTS;
    const txSlots = options.txSlots ?? DEFAULT_TX_SLOTS;
    this.slotBytes = options.slotBytes ?? DEFAULT_SLOT_BYTES;
    this.rxData = new Uint8Array(slots * this.slotBytes);
    this.rxMeta = new Uint32Array(slots * UDP_META_WORDS);
    this.txData = new Uint8Array(options.txBytes ?? txSlots * this.slotBytes);
    this.txMeta = new Uint32Array(txSlots * UDP_META_WORDS);
    this.host = options.host;
    this.group = options.group;
    const member = this.group?.attach(this);
    this.groupId = member?.id ?? -1;
    try {
      this.handle = addon.udpOpen(
        options.host,
        options.port,
        this.rxData,
        this.rxMeta,
        this.slotBytes,
        this.txData,
        this.txMeta,
        member?.handle ?? ((count, err) => this.deliver(count, err)),
        options.recvBufferBytes ?? 0,
        options.sendBufferBytes ?? 0,
        member?.id,
      );
    } catch (err) {
      if (member) this.group!.detach(member.id);
      translate(err);
    }
    this.port = addon.udpLocalPort(this.handle);
  }

  /**
   * Binds a socket (port 0: any free port; see .port). Throws UdpIoError (EADDRINUSE, EADDRNOTAVAIL, EINVAL...;
   * ENOSYS off Linux).
   */
  static open(options: NativeUdpOptions): NativeUdpSocket {
    return new NativeUdpSocket(options);
  }

  /** One call per received batch: packets 0..count-1 are in the ring until the callback returns. */
  onBatch(listener: BatchListener): this {
    this.batchListener = listener;
    return this;
  }

  /** Receive errors; without a listener they are thrown (an uncaught exception), never dropped. */
  onError(listener: ErrorListener): this {
    this.errorListener = listener;
    return this;
  }

  /** @internal Called by the addon (or the group) with a received batch or a receive error. */
  deliver(count: number, err: NativeErrno | undefined): void {
    if (err !== undefined) {
      const e = new UdpIoError(err.message, err.code, err.errno, err.syscall, undefined, undefined, { cause: err });
      if (this.errorListener === undefined) throw e;
      this.errorListener(e);
      return;
    }
    if (this.batchListener === undefined) this.unhandled += count;
    else this.batchListener(count, this);
  }

  rxOffset(i: number): number {
    return i * this.slotBytes;
  }
  rxLength(i: number): number {
    return this.rxMeta[i * UDP_META_WORDS];
  }
  rxAddress(i: number): number {
    return this.rxMeta[i * UDP_META_WORDS + 1];
  }
  rxPort(i: number): number {
    return this.rxMeta[i * UDP_META_WORDS + 2];
  }
  rxTruncated(i: number): boolean {
    return (this.rxMeta[i * UDP_META_WORDS + 3] & UDP_FLAG_TRUNCATED) !== 0;
  }
  /** A view of packet i of the current batch (allocates a view: for tests and edges, not per packet). */
  packet(i: number): Uint8Array {
    const o = i * this.slotBytes;
    return this.rxData.subarray(o, o + this.rxLength(i));
  }

  /** Fills send-table entry i; the payload must already be at txData[offset, offset + length). */
  setTx(i: number, offset: number, length: number, address: number, port: number): void {
    const w = i * UDP_META_WORDS;
    this.txMeta[w] = offset;
    this.txMeta[w + 1] = length;
    this.txMeta[w + 2] = address;
    this.txMeta[w + 3] = port;
  }

  /** Sends table entries 0..count-1 with one sendmmsg; returns how many left (fewer on EAGAIN, see stats). */
  send(count: number): number {
    try {
      return addon.udpSend(this.handle, count);
    } catch (err) {
      translate(err);
    }
  }

  /** One crossing for many sockets' tables: sent[i] = packets sent by handles[i]. Keep `handles` between ticks. */
  static sendMany(handles: readonly UdpHandle[], counts: Uint32Array, sent: Uint32Array): void {
    try {
      addon.udpSendMany(handles, counts, sent);
    } catch (err) {
      translate(err);
    }
  }

  stats(): UdpStats {
    addon.udpStats(this.handle, this.statsOut);
    const s = this.statsOut;
    return {
      rxPackets: s[0],
      rxBatches: s[1],
      rxTruncated: s[2],
      txPackets: s[3],
      txDropped: s[4],
      rxUnhandled: this.unhandled,
    };
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Stops receiving and closes the socket (idempotent; safe inside onBatch). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    addon.udpClose(this.handle);
    this.group?.detach(this.groupId);
  }
}

/** Shared socket: the kernel receive buffer for all calls' packets between two loop turns (net.core.rmem_max caps it). */
export const SHARED_RECV_BUFFER_BYTES = 4 * 1024 * 1024;
/** Shared socket on io_uring: provided receive buffers, a few loop turns of 1000 calls at 50 packets/s. */
export const SHARED_RECEIVE_BUFFERS = 2048;

/**
 * A peer's IPv4 address and port -> a small id (a call's stream), for demultiplexing one shared socket in user
 * space. Open addressing with linear probing in typed arrays, deletion by backward shift (Knuth, TAOCP vol. 3,
 * 6.4 Algorithm R), so lookups allocate nothing and no tombstones pile up as calls come and go.
 */
export class UdpPeerTable {
  /** Most peers the table holds (half its slots, so probes stay short). */
  readonly capacity: number;
  private readonly mask: number;
  private readonly addresses: Uint32Array;
  /** port + 1; 0 marks an empty slot */
  private readonly ports: Uint32Array;
  private readonly ids: Int32Array;
  private count = 0;

  constructor(maxPeers: number) {
    if (!Number.isInteger(maxPeers) || maxPeers < 1) throw new RangeError('maxPeers must be a positive integer');
    let slots = 2;
    while (slots < 2 * maxPeers) slots *= 2;
    this.capacity = maxPeers;
    this.mask = slots - 1;
    this.addresses = new Uint32Array(slots);
    this.ports = new Uint32Array(slots);
    this.ids = new Int32Array(slots);
  }

  get size(): number {
    return this.count;
  }

  private home(address: number, port: number): number {
    // A multiplicative mix (golden-ratio constant, then a murmur3 finaliser step) of both fields.
    let h = Math.imul(address, 0x9e3779b1) ^ port;
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    return (h ^ (h >>> 13)) & this.mask;
  }

  private find(address: number, port: number): number {
    const p = port + 1;
    for (let i = this.home(address, port); ; i = (i + 1) & this.mask) {
      if (this.ports[i] === 0) return -1 - i; // empty: not present, and where it would go
      if (this.ports[i] === p && this.addresses[i] === address) return i;
    }
  }

  /** The id of the peer at address:port, or -1. */
  get(address: number, port: number): number {
    const i = this.find(address, port);
    return i >= 0 ? this.ids[i] : -1;
  }

  /** Maps address:port (address as ipv4ToUint32) to id (>= 0), replacing an earlier id. */
  set(address: number, port: number, id: number): void {
    if (!Number.isInteger(id) || id < 0 || id > 0x7fffffff)
      throw new RangeError('peer id must be a non-negative int32');
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError('port must be 0..65535');
    const i = this.find(address >>> 0, port);
    if (i >= 0) {
      this.ids[i] = id;
      return;
    }
    if (this.count >= this.capacity) throw new RangeError(`peer table is full (${this.capacity} peers)`);
    const slot = -1 - i;
    this.addresses[slot] = address >>> 0;
    this.ports[slot] = port + 1;
    this.ids[slot] = id;
    this.count++;
  }

  /** Forgets address:port; false when it was not there. */
  delete(address: number, port: number): boolean {
    let i = this.find(address >>> 0, port);
    if (i < 0) return false;
    this.count--;
    // Backward shift: pull later entries of the probe run into the hole unless their home lies in (hole, j].
    for (let j = (i + 1) & this.mask; this.ports[j] !== 0; j = (j + 1) & this.mask) {
      const home = this.home(this.addresses[j], this.ports[j] - 1);
      const between = i <= j ? home > i && home <= j : home > i || home <= j;
      if (between) continue;
      this.addresses[i] = this.addresses[j];
      this.ports[i] = this.ports[j];
      this.ids[i] = this.ids[j];
      i = j;
    }
    this.ports[i] = 0;
    return true;
  }
}

export interface SharedUdpOptions {
  host: string;
  /** 0 for any free port */
  port: number;
  /** peers (call streams) the socket serves at once */
  maxPeers: number;
  /** as NativeUdpGroupOptions.backend; default 'auto' */
  backend?: UdpGroupBackend | 'auto';
  /** receive ring slots: datagrams per batch (default MAX_BATCH) */
  slots?: number;
  /** send table entries: packets per send() (default MAX_BATCH) */
  txSlots?: number;
  slotBytes?: number;
  txBytes?: number;
  /** SO_RCVBUF; default SHARED_RECV_BUFFER_BYTES */
  recvBufferBytes?: number;
  /** SO_SNDBUF; default SHARED_RECV_BUFFER_BYTES */
  sendBufferBytes?: number;
  /** io_uring provided receive buffers; default SHARED_RECEIVE_BUFFERS */
  receiveBuffers?: number;
  /** as NativeUdpGroupOptions.fixedFiles */
  fixedFiles?: boolean;
}

/** A packet from a known peer: packet i of socket's current batch belongs to peer `id` (UdpPeerTable). */
export type PeerPacketListener = (id: number, i: number, socket: NativeUdpSocket) => void;
/** A packet from an address:port not in the table (a new NAT binding, a stray or hostile sender). */
export type UnknownPacketListener = (i: number, socket: NativeUdpSocket) => void;

/**
 * One UDP socket for many calls (RTP of a whole worker on one port): batches are received from every peer and
 * demultiplexed here by source address and port (peers); each send-table entry carries its own destination, so a
 * tick of every call goes out with one sendmmsg (poll backend) or one io_uring_enter (io_uring). The kernel sees
 * one socket instead of one per call: bench/udp-io.ts compares the two (modes shared-*).
 * Packets from unknown sources are never dropped silently: onUnknown gets them, and stats count them.
 */
export class SharedUdpSocket {
  readonly peers: UdpPeerTable;
  readonly socket: NativeUdpSocket;
  readonly group: NativeUdpGroup;
  private readonly ids = new Uint32Array(1);
  private readonly counts = new Uint32Array(1);
  private readonly sent = new Uint32Array(1);
  private packetListener: PeerPacketListener | undefined;
  private unknownListener: UnknownPacketListener | undefined;
  /** packets from sources not in peers (all of them, whether or not onUnknown is set) */
  unknownPackets = 0;
  /** packets from known peers received while no onPacket listener was set */
  unhandledPackets = 0;

  private constructor(options: SharedUdpOptions) {
    this.peers = new UdpPeerTable(options.maxPeers);
    const slotBytes = options.slotBytes ?? DEFAULT_SLOT_BYTES;
    this.group = new NativeUdpGroup(1, {
      backend: options.backend,
      payloadBytes: slotBytes,
      receiveBuffers: options.receiveBuffers ?? SHARED_RECEIVE_BUFFERS,
      fixedFiles: options.fixedFiles,
    });
    try {
      this.socket = NativeUdpSocket.open({
        host: options.host,
        port: options.port,
        slots: options.slots ?? MAX_BATCH,
        txSlots: options.txSlots ?? MAX_BATCH,
        slotBytes,
        txBytes: options.txBytes,
        recvBufferBytes: options.recvBufferBytes ?? SHARED_RECV_BUFFER_BYTES,
        sendBufferBytes: options.sendBufferBytes ?? SHARED_RECV_BUFFER_BYTES,
        group: this.group,
      });
    } catch (err) {
      this.group.close();
      throw err;
    }
    this.ids[0] = this.socket.groupId;
    this.socket.onBatch((count, s) => this.demux(count, s));
  }

  static open(options: SharedUdpOptions): SharedUdpSocket {
    return new SharedUdpSocket(options);
  }

  get port(): number {
    return this.socket.port;
  }

  get backend(): UdpGroupBackend {
    return this.group.backend;
  }

  /** Each packet from a known peer, with its id; read it (socket.rxOffset(i), rxLength(i)) before returning. */
  onPacket(listener: PeerPacketListener): this {
    this.packetListener = listener;
    return this;
  }

  /** Each packet from a source not in peers (see rxAddress(i), rxPort(i)); counted in unknownPackets either way. */
  onUnknown(listener: UnknownPacketListener): this {
    this.unknownListener = listener;
    return this;
  }

  /** Receive errors (as NativeUdpSocket.onError: thrown without a listener). */
  onError(listener: ErrorListener): this {
    this.socket.onError(listener);
    return this;
  }

  private demux(count: number, s: NativeUdpSocket): void {
    const meta = s.rxMeta;
    for (let i = 0; i < count; i++) {
      const w = i * UDP_META_WORDS;
      const id = this.peers.get(meta[w + 1], meta[w + 2]);
      if (id < 0) {
        this.unknownPackets++;
        this.unknownListener?.(i, s);
      } else if (this.packetListener === undefined) {
        this.unhandledPackets++;
      } else {
        this.packetListener(id, i, s);
      }
    }
  }

  /**
   * Sends socket's send-table entries 0..count-1 (socket.setTx: each with its destination) with one sendmmsg or
   * one io_uring_enter; returns how many left (fewer on EAGAIN, counted in socket.stats().txDropped).
   */
  send(count: number): number {
    this.counts[0] = count;
    this.group.sendMany(this.ids, this.counts, this.sent, 1);
    return this.sent[0];
  }

  get isClosed(): boolean {
    return this.socket.isClosed;
  }

  /** Closes the socket, then its group (idempotent). */
  close(): void {
    this.socket.close();
    this.group.close();
  }
}
