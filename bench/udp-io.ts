// What a call's UDP I/O costs through node:dgram, and through the native addon's endpoints (src/media/udp-native.ts).
// N calls, each one UDP socket in the "gateway" process (pinned to core 1) exchanging 50 packets/s each way of 172
// bytes (12 RTP + 160 G.711) with a generator process (pinned to core 0) on 127.0.0.1.
// Gateway modes:
// - 'dgram': one dgram socket per call, connected, one send() per packet;
// - 'native-uring': one native socket per call in a NativeUdpGroup on io_uring: multishot receives reaped with one
//   io_uring_enter per loop iteration and one JS dispatch; the tick's sends for all calls in one io_uring_enter
//   (group.sendMany by member id);
// - 'native-poll': the same group on the poll backend: a uv_poll and one recvmmsg per readable socket, one JS
//   dispatch per loop iteration; one sendMany() crossing per tick, one sendmmsg per socket;
// - 'native-ungrouped': as native-poll, but one JS callback per socket per received batch;
// - 'shared-uring', 'shared-poll': ONE socket for all calls (SharedUdpSocket), on either backend: received
//   packets demultiplexed by source address:port in JS (a peer table lookup per packet), each tick's packets of
//   every call sent as one table whose entries carry their destinations;
// - 'shared-uring-both': shared-uring against a generator that also uses one shared socket;
// - 'native-uring-fixed', 'shared-uring-fixed': as native-uring and shared-uring with the sockets registered in the
//   rings' file tables (fixedFiles: no descriptor lookup per request).
// The generator is native-uring (the lightest socket per call) except in shared-uring-both, so every other mode
// faces the same load.
// Note on loopback the sender's kernel also delivers into the receiver's socket (the softirq runs in the sending
// context): the gateway's figure includes delivering its packets to the generator's sockets, and not delivering
// the generator's packets to its own. With a NIC the receive side pays that instead; per packet it is a wash.
// Measured over fixed windows: CPU of the gateway process (process.cpuUsage: user and system) and of its main
// thread alone (/proc/self/task/<tid>/stat, 10 ms ticks), and its context switches (wakeups). Three windows per
// run: full duplex; the gateway only sending (generator quiet); the gateway only receiving. The one-way windows
// give the cost of a packet each way whatever share of the nominal rate a busy machine let each side move (a
// starved gateway sends fewer ticks but receives everything, which skews a duplex per-packet average).
// Usage: node --import tsx bench/udp-io.ts [calls...] (default 250 500 1000); env UDP_RUNS (5), UDP_WINDOW_SEC (5),
// UDP_MODES ("dgram,native-poll,native-uring"), UDP_RESULTS (file name in bench/results, "udp-io").
// The shared-socket comparison: UDP_RUNS=3 UDP_MODES=native-uring,native-poll,shared-uring,shared-poll,shared-uring-both
// UDP_RESULTS=udp-shared node --import tsx bench/udp-io.ts 500 1000
import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import os from 'node:os';
import {
  MAX_BATCH,
  NativeUdpGroup,
  NativeUdpSocket,
  SharedUdpSocket,
  ipv4ToUint32,
  type UdpHandle,
} from '../src/media/udp-native.js';

export type UdpMode =
  | 'dgram'
  | 'native-uring'
  | 'native-poll'
  | 'native-ungrouped'
  | 'shared-uring'
  | 'shared-poll'
  | 'shared-uring-both'
  | 'native-uring-fixed'
  | 'shared-uring-fixed';
const GENERATOR_MODE: UdpMode = 'native-uring';
/** The generator of a mode: a socket per call (the same load for every gateway mode), or one shared socket too. */
function generatorMode(mode: UdpMode): UdpMode {
  return mode === 'shared-uring-both' ? 'shared-uring' : GENERATOR_MODE;
}

export const PACKET_BYTES = 172;
export const PACKETS_PER_SEC = 50;
const TICK_MS = 1000 / PACKETS_PER_SEC;
const HOST = '127.0.0.1';
const WARMUP_MS = 2000;
/** After switching a side's sending off or on, before the next window. */
const SETTLE_MS = 300;

type Msg =
  | { type: 'ports'; ports: number[] }
  | { type: 'peer'; ports: number[] }
  | { type: 'start' }
  | { type: 'sending'; on: boolean }
  | { type: 'measure'; windowMs: number }
  | {
      type: 'result';
      cpuUserMs: number;
      cpuSystemMs: number;
      mainUserMs: number;
      mainSystemMs: number;
      contextSwitches: number;
      wallMs: number;
      received: number;
      sent: number;
    }
  | { type: 'halt' }
  | { type: 'stop' };

/** The per-mode socket work of a side: bind N sockets, learn the peers, send one packet per call. */
interface SideIo {
  ports(): number[];
  peer(ports: number[]): Promise<void>;
  sendAll(): void;
  close(): void;
}

async function dgramIo(calls: number, onReceive: (n: number) => void, isStopping: () => boolean): Promise<SideIo> {
  const sockets: dgram.Socket[] = [];
  for (let i = 0; i < calls; i++) {
    const s = dgram.createSocket('udp4');
    s.on('message', () => onReceive(1));
    s.on('error', (err: NodeJS.ErrnoException) => {
      // After the peer closed its sockets, ICMP port-unreachable surfaces as ECONNREFUSED: expected then only.
      if (isStopping() && err.code === 'ECONNREFUSED') return;
      throw err;
    });
    await new Promise<void>((r) => s.bind(0, HOST, r));
    sockets.push(s);
  }
  const packet = Buffer.alloc(PACKET_BYTES, 0xd5);
  packet[0] = 0x80;
  return {
    ports: () => sockets.map((s) => s.address().port),
    peer: async (ports) => {
      await Promise.all(sockets.map((s, i) => new Promise<void>((r) => s.connect(ports[i], HOST, r))));
    },
    sendAll: () => {
      for (let i = 0; i < sockets.length; i++) sockets[i].send(packet);
    },
    close: () => {
      for (const s of sockets) s.close();
    },
  };
}

function nativeIo(calls: number, onReceive: (n: number) => void, mode: UdpMode): SideIo {
  const sockets: NativeUdpSocket[] = [];
  const group =
    mode === 'native-ungrouped'
      ? undefined
      : new NativeUdpGroup(calls, {
          backend: mode === 'native-uring' || mode === 'native-uring-fixed' ? 'io_uring' : 'poll',
          payloadBytes: PACKET_BYTES,
          fixedFiles: mode === 'native-uring-fixed',
        });
  for (let i = 0; i < calls; i++) {
    // Small rings: 50 packets/s per call; the kernel buffer absorbs bursts beyond a batch.
    const s = NativeUdpSocket.open({ host: HOST, port: 0, slots: 16, txSlots: 1, slotBytes: PACKET_BYTES, group });
    s.onBatch((count) => onReceive(count));
    s.txData.fill(0xd5);
    s.txData[0] = 0x80;
    sockets.push(s);
  }
  const handles: UdpHandle[] = sockets.map((s) => s.handle);
  const ids = Uint32Array.from(sockets, (s) => s.groupId);
  const counts = new Uint32Array(calls).fill(1);
  const sent = new Uint32Array(calls);
  const loopback = ipv4ToUint32(HOST);
  return {
    ports: () => sockets.map((s) => s.port),
    peer: async (ports) => {
      for (let i = 0; i < calls; i++) sockets[i].setTx(0, 0, PACKET_BYTES, loopback, ports[i]);
    },
    sendAll:
      group?.backend === 'io_uring'
        ? () => group.sendMany(ids, counts, sent)
        : () => NativeUdpSocket.sendMany(handles, counts, sent),
    close: () => {
      for (const s of sockets) s.close();
      group?.close();
    },
  };
}

/**
 * One SharedUdpSocket for all calls: the peer table maps each peer port to its call and every received packet is
 * looked up in it (the demultiplexing a socket per call gets from the kernel); each tick sends one table of
 * `calls` entries, each carrying its destination. Against a shared generator every packet comes from one
 * address:port: the lookup then always finds the same entry, at the same cost per packet.
 */
function sharedIo(calls: number, onReceive: (n: number) => void, mode: UdpMode): SideIo {
  if (calls > MAX_BATCH) throw new RangeError(`shared modes send one table per tick: at most ${MAX_BATCH} calls`);
  const shared = SharedUdpSocket.open({
    host: HOST,
    port: 0,
    maxPeers: calls,
    backend: mode === 'shared-poll' ? 'poll' : 'io_uring',
    fixedFiles: mode === 'shared-uring-fixed',
    slotBytes: PACKET_BYTES,
    txSlots: calls,
  });
  shared.onPacket(() => onReceive(1));
  shared.onUnknown(() => {
    throw new Error('a packet from an unknown source');
  });
  const s = shared.socket;
  s.txData.fill(0xd5);
  s.txData[0] = 0x80;
  const loopback = ipv4ToUint32(HOST);
  return {
    ports: () => new Array<number>(calls).fill(shared.port),
    peer: async (ports) => {
      for (let i = 0; i < calls; i++) {
        shared.peers.set(loopback, ports[i], i);
        s.setTx(i, 0, PACKET_BYTES, loopback, ports[i]);
      }
    },
    sendAll: () => {
      shared.send(calls);
    },
    close: () => shared.close(),
  };
}

/** CPU ticks (user, system) of this process's main thread and its context switches so far. */
function mainThreadUsage(): { userMs: number; systemMs: number; switches: number } {
  // /proc/<pid>/task/<pid>/stat: fields 14 and 15 (utime, stime) in clock ticks of 10 ms, after the "(comm)".
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const status = readFileSync(`/proc/self/task/${process.pid}/status`, 'utf8');
  const v = Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
  const nv = Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return { userMs: Number(f[11]) * 10, systemMs: Number(f[12]) * 10, switches: v + nv };
}

/** One side: N sockets, each sending PACKETS_PER_SEC packets to its peer socket, deadline-paced. */
async function side(calls: number, mode: UdpMode): Promise<void> {
  const send = (m: Msg) => process.send!(m);
  let received = 0;
  let sent = 0;
  let stopping = false;
  const onReceive = (n: number) => {
    received += n;
  };
  const io =
    mode === 'dgram'
      ? await dgramIo(calls, onReceive, () => stopping)
      : mode.startsWith('shared-')
        ? sharedIo(calls, onReceive, mode)
        : nativeIo(calls, onReceive, mode);
  send({ type: 'ports', ports: io.ports() });
  let timer: NodeJS.Timeout | undefined;
  let next = 0;
  let sending = true;
  const tick = () => {
    const now = performance.now();
    // Deadline pacing; after a stall send at most 2 frames per call (as the pacing clock does).
    let due = 0;
    while (next <= now && due < 2) {
      due++;
      next += TICK_MS;
    }
    if (next <= now) next = now + TICK_MS;
    for (let d = 0; d < due && sending; d++) {
      io.sendAll();
      sent += calls;
    }
    timer = setTimeout(tick, Math.max(0, next - performance.now()));
  };
  process.on('message', async (m: Msg) => {
    if (m.type === 'peer') {
      await io.peer(m.ports);
      send({ type: 'ports', ports: [] });
    } else if (m.type === 'start') {
      next = performance.now() + TICK_MS * Math.random();
      tick();
    } else if (m.type === 'sending') {
      sending = m.on;
      send({ type: 'ports', ports: [] });
    } else if (m.type === 'measure') {
      const r0 = received;
      const s0 = sent;
      const c0 = process.cpuUsage();
      const m0 = mainThreadUsage();
      const t0 = performance.now();
      setTimeout(() => {
        const c = process.cpuUsage(c0);
        const m1 = mainThreadUsage();
        send({
          type: 'result',
          cpuUserMs: c.user / 1000,
          cpuSystemMs: c.system / 1000,
          mainUserMs: m1.userMs - m0.userMs,
          mainSystemMs: m1.systemMs - m0.systemMs,
          contextSwitches: m1.switches - m0.switches,
          wallMs: performance.now() - t0,
          received: received - r0,
          sent: sent - s0,
        });
      }, m.windowMs);
    } else if (m.type === 'halt') {
      stopping = true;
      clearTimeout(timer);
      send({ type: 'ports', ports: [] });
    } else if (m.type === 'stop') {
      stopping = true;
      clearTimeout(timer);
      io.close();
      process.disconnect();
    }
  });
}

function startSide(core: number, calls: number, mode: UdpMode): ChildProcess {
  const file = fileURLToPath(import.meta.url);
  return spawn(
    'taskset',
    ['-c', String(core), process.execPath, '--import', 'tsx', file, '--side', String(calls), mode],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
}

function next<T extends Msg['type']>(p: ChildProcess, type: T): Promise<Extract<Msg, { type: T }>> {
  return new Promise((resolve, reject) => {
    const onMsg = (m: Msg) => {
      if (m.type === type) {
        p.off('message', onMsg);
        p.off('exit', onExit);
        resolve(m as Extract<Msg, { type: T }>);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`bench side exited (${code}) before '${type}'`));
    p.on('message', onMsg);
    p.once('exit', onExit);
  });
}

export interface UdpRun {
  mode: UdpMode;
  calls: number;
  coreFraction: number;
  userMs: number;
  systemMs: number;
  mainUserMs: number;
  mainSystemMs: number;
  contextSwitchesPerSec: number;
  wallMs: number;
  receivedPerSec: number;
  sentPerSec: number;
  /** gateway CPU per packet sent while it only sends (on loopback: includes delivering it into the peer socket) */
  usPerTxPacket: number;
  /** gateway CPU per packet received while it only receives (the delivery into its socket is the sender's) */
  usPerRxPacket: number;
  txUserFraction: number;
  rxUserFraction: number;
}

/** One run: gateway on core 1, generator on core 0; returns the gateway's CPU over `windowMs`. */
export async function runOnce(calls: number, windowMs: number, mode: UdpMode = 'dgram'): Promise<UdpRun> {
  const gw = startSide(1, calls, mode);
  const gen = startSide(0, calls, generatorMode(mode));
  try {
    const [gwPorts, genPorts] = await Promise.all([next(gw, 'ports'), next(gen, 'ports')]);
    gw.send({ type: 'peer', ports: genPorts.ports } satisfies Msg);
    gen.send({ type: 'peer', ports: gwPorts.ports } satisfies Msg);
    await Promise.all([next(gw, 'ports'), next(gen, 'ports')]);
    gw.send({ type: 'start' } satisfies Msg);
    gen.send({ type: 'start' } satisfies Msg);
    await new Promise((r) => setTimeout(r, WARMUP_MS));
    const window = async (): Promise<Extract<Msg, { type: 'result' }>> => {
      gw.send({ type: 'measure', windowMs } satisfies Msg);
      return next(gw, 'result');
    };
    const sending = async (p: ChildProcess, on: boolean) => {
      p.send({ type: 'sending', on } satisfies Msg);
      await next(p, 'ports');
    };
    const r = await window();
    // One way at a time: the gateway only sends (the generator is quiet), then only receives.
    await sending(gen, false);
    await new Promise((res) => setTimeout(res, SETTLE_MS));
    const tx = await window();
    await sending(gen, true);
    await sending(gw, false);
    await new Promise((res) => setTimeout(res, SETTLE_MS));
    const rx = await window();
    const sec = r.wallMs / 1000;
    return {
      mode,
      calls,
      coreFraction: (r.cpuUserMs + r.cpuSystemMs) / r.wallMs,
      userMs: r.cpuUserMs,
      systemMs: r.cpuSystemMs,
      mainUserMs: r.mainUserMs,
      mainSystemMs: r.mainSystemMs,
      contextSwitchesPerSec: r.contextSwitches / sec,
      wallMs: r.wallMs,
      receivedPerSec: r.received / sec,
      sentPerSec: r.sent / sec,
      usPerTxPacket: ((tx.cpuUserMs + tx.cpuSystemMs) * 1000) / Math.max(1, tx.sent),
      usPerRxPacket: ((rx.cpuUserMs + rx.cpuSystemMs) * 1000) / Math.max(1, rx.received),
      txUserFraction: tx.cpuUserMs / (tx.cpuUserMs + tx.cpuSystemMs),
      rxUserFraction: rx.cpuUserMs / (rx.cpuUserMs + rx.cpuSystemMs),
    };
  } finally {
    const live = [gw, gen].filter((p) => p.connected);
    for (const p of live) p.send({ type: 'halt' } satisfies Msg);
    await Promise.all(live.map((p) => next(p, 'ports').catch(() => undefined)));
    for (const p of live) if (p.connected) p.send({ type: 'stop' } satisfies Msg);
    await Promise.all([gw, gen].map((p) => (p.exitCode === null ? new Promise((r) => p.once('exit', r)) : undefined)));
  }
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export interface UdpSummary {
  mode: UdpMode;
  calls: number;
  runs: number;
  windowSec: number;
  medianCoreFraction: number;
  /** user-space share of the gateway's CPU (JS, libuv, addon); the rest is the kernel's UDP path */
  medianUserFraction: number;
  medianCpuUsPerCallPerSec: number;
  medianUsPerPacket: number;
  /** the main thread alone (the event loop: JS, addon, syscalls), user and system, per packet */
  medianMainUserUsPerPacket: number;
  medianMainSystemUsPerPacket: number;
  /** wakeups of the main thread per packet (context switches / packets) */
  medianSwitchesPerPacket: number;
  /** one way at a time (see UdpRun): the cost of a packet each way, independent of the duplex mix */
  medianUsPerTxPacket: number;
  medianUsPerRxPacket: number;
  medianTxUserFraction: number;
  medianRxUserFraction: number;
  /** (tx + rx per packet) x calls x 50: the core share of full-duplex I/O at full rate, from the one-way costs */
  projectedDuplexCoreFraction: number;
  medianReceivedPerSec: number;
  medianSentPerSec: number;
  /** Packets per second both ways the calls should move: calls x 50 x 2. */
  nominalPacketsPerSec: number;
  /** Share of the nominal packets actually moved (below ~0.95 the machine was too busy to keep up). */
  deliveredFraction: number;
  /** us/packet x nominal packets/s: the core share at full rate, robust to a busy machine. */
  projectedCoreFraction: number;
  allCoreFractions: number[];
}

function summarize(mode: UdpMode, calls: number, rs: UdpRun[], windowSec: number): UdpSummary {
  const frac = median(rs.map((r) => r.coreFraction));
  const pps = median(rs.map((r) => r.receivedPerSec + r.sentPerSec));
  const usPerPacket = median(rs.map((r) => (r.coreFraction * 1e6) / (r.receivedPerSec + r.sentPerSec)));
  const nominal = calls * PACKETS_PER_SEC * 2;
  return {
    mode,
    calls,
    runs: rs.length,
    windowSec,
    medianCoreFraction: frac,
    medianUserFraction: median(rs.map((r) => r.userMs / (r.userMs + r.systemMs))),
    medianCpuUsPerCallPerSec: (frac * 1e6) / calls,
    medianUsPerPacket: usPerPacket,
    medianMainUserUsPerPacket: median(
      rs.map((r) => (r.mainUserMs * 1000) / ((r.receivedPerSec + r.sentPerSec) * (r.wallMs / 1000))),
    ),
    medianMainSystemUsPerPacket: median(
      rs.map((r) => (r.mainSystemMs * 1000) / ((r.receivedPerSec + r.sentPerSec) * (r.wallMs / 1000))),
    ),
    medianSwitchesPerPacket: median(rs.map((r) => r.contextSwitchesPerSec / (r.receivedPerSec + r.sentPerSec))),
    medianUsPerTxPacket: median(rs.map((r) => r.usPerTxPacket)),
    medianUsPerRxPacket: median(rs.map((r) => r.usPerRxPacket)),
    medianTxUserFraction: median(rs.map((r) => r.txUserFraction)),
    medianRxUserFraction: median(rs.map((r) => r.rxUserFraction)),
    projectedDuplexCoreFraction:
      ((median(rs.map((r) => r.usPerTxPacket)) + median(rs.map((r) => r.usPerRxPacket))) * calls * PACKETS_PER_SEC) /
      1e6,
    nominalPacketsPerSec: nominal,
    deliveredFraction: pps / nominal,
    projectedCoreFraction: (usPerPacket * nominal) / 1e6,
    medianReceivedPerSec: median(rs.map((r) => r.receivedPerSec)),
    medianSentPerSec: median(rs.map((r) => r.sentPerSec)),
    allCoreFractions: rs.map((r) => Number(r.coreFraction.toFixed(4))),
  };
}

export async function measureUdpIo(
  callCounts: number[],
  runs: number,
  windowSec: number,
  mode: UdpMode = 'dgram',
): Promise<UdpSummary[]> {
  const out: UdpSummary[] = [];
  for (const calls of callCounts) {
    const rs: UdpRun[] = [];
    for (let i = 0; i < runs; i++) rs.push(await runOnce(calls, windowSec * 1000, mode));
    out.push(summarize(mode, calls, rs, windowSec));
  }
  return out;
}

/** The threshold for native socket I/O: dgram costing more than about a third of a core at 500 calls. */
export const NATIVE_IO_THRESHOLD_CORE_FRACTION = 1 / 3;

async function main(): Promise<void> {
  const args = process.argv
    .slice(2)
    .map(Number)
    .filter((n) => n > 0);
  const callCounts = args.length ? args : [250, 500, 1000];
  const runs = Number(process.env.UDP_RUNS ?? 5);
  const windowSec = Number(process.env.UDP_WINDOW_SEC ?? 5);
  const modes = (process.env.UDP_MODES ?? 'dgram,native-poll,native-uring').split(',') as UdpMode[];
  const loadAverageAtStart = os.loadavg();
  const results: UdpSummary[] = [];
  for (const calls of callCounts) {
    // Modes interleaved run by run, so a change in the machine's load hits both alike.
    const byMode = new Map<UdpMode, UdpRun[]>(modes.map((m) => [m, []]));
    for (let i = 0; i < runs; i++)
      for (const m of modes) byMode.get(m)!.push(await runOnce(calls, windowSec * 1000, m));
    for (const m of modes) results.push(summarize(m, calls, byMode.get(m)!, windowSec));
  }
  for (const r of results) {
    console.log(
      `${r.mode} ${r.calls} calls: ${(r.medianCoreFraction * 100).toFixed(1)}% of a core (median of ${r.runs}: ${r.allCoreFractions.join(', ')}), ` +
        `${r.medianUsPerPacket.toFixed(2)} us/packet (${(r.medianUserFraction * 100).toFixed(0)}% user; main thread ${r.medianMainUserUsPerPacket.toFixed(2)} user + ${r.medianMainSystemUsPerPacket.toFixed(2)} sys), ${r.medianSwitchesPerPacket.toFixed(3)} wakeups/packet, rx ${r.medianReceivedPerSec.toFixed(0)}/s tx ${r.medianSentPerSec.toFixed(0)}/s ` +
        `(${(r.deliveredFraction * 100).toFixed(0)}% of nominal), projected at full rate ${(r.projectedCoreFraction * 100).toFixed(1)}% of a core; ` +
        `one way: tx ${r.medianUsPerTxPacket.toFixed(2)} us (${(r.medianTxUserFraction * 100).toFixed(0)}% user), rx ${r.medianUsPerRxPacket.toFixed(2)} us (${(r.medianRxUserFraction * 100).toFixed(0)}% user) -> ${(r.projectedDuplexCoreFraction * 100).toFixed(1)}% of a core at full rate`,
    );
  }
  const ratios = callCounts.flatMap((calls) => {
    const d = results.find((r) => r.calls === calls && r.mode === 'dgram');
    const p = results.find((r) => r.calls === calls && r.mode === 'native-poll');
    const u = results.find((r) => r.calls === calls && r.mode === 'native-uring');
    if (!d || !u) return [];
    const oneWay = (x: UdpSummary) => x.medianUsPerTxPacket + x.medianUsPerRxPacket;
    return [
      {
        calls,
        usPerPacketDgramOverUring: d.medianUsPerPacket / u.medianUsPerPacket,
        usPerPacketPollOverUring: p ? p.medianUsPerPacket / u.medianUsPerPacket : null,
        oneWayDgramOverUring: oneWay(d) / oneWay(u),
        oneWayPollOverUring: p ? oneWay(p) / oneWay(u) : null,
      },
    ];
  });
  // Shared socket against a socket per call: per packet, both ways, gateway CPU.
  const sharedRatios = callCounts.flatMap((calls) => {
    const at = (m: UdpMode) => results.find((r) => r.calls === calls && r.mode === m);
    const oneWay = (x: UdpSummary) => x.medianUsPerTxPacket + x.medianUsPerRxPacket;
    const pairs: Array<[UdpMode, UdpMode]> = [
      ['shared-uring', 'native-uring'],
      ['shared-poll', 'native-uring'],
      ['shared-poll', 'native-poll'],
      ['shared-uring-both', 'native-uring'],
      ['native-uring-fixed', 'native-uring'],
      ['shared-uring-fixed', 'shared-uring'],
    ];
    return pairs.flatMap(([a, b]) => {
      const x = at(a);
      const y = at(b);
      if (!x || !y) return [];
      return [
        { calls, ratio: `${a}/${b}`, duplex: x.medianUsPerPacket / y.medianUsPerPacket, oneWay: oneWay(x) / oneWay(y) },
      ];
    });
  });
  for (const r of sharedRatios) {
    console.log(
      `${r.calls} calls: ${r.ratio} per packet: duplex ${r.duplex.toFixed(2)}x, one way tx+rx ${r.oneWay.toFixed(2)}x`,
    );
  }
  for (const r of ratios) {
    console.log(
      `${r.calls} calls: tx+rx one way dgram/io_uring ${r.oneWayDgramOverUring.toFixed(2)}x, poll/io_uring ${r.oneWayPollOverUring?.toFixed(2) ?? 'n/a'}x; ` +
        `duplex mix dgram/io_uring ${r.usPerPacketDgramOverUring.toFixed(2)}x, poll/io_uring ${r.usPerPacketPollOverUring?.toFixed(2) ?? 'n/a'}x`,
    );
  }
  const at500 = results.find((r) => r.calls === 500 && r.mode === 'dgram');
  const verdict = at500
    ? Math.max(at500.medianCoreFraction, at500.projectedCoreFraction, at500.projectedDuplexCoreFraction) >
      NATIVE_IO_THRESHOLD_CORE_FRACTION
      ? 'move socket I/O into the native addon (recvmmsg/sendmmsg)'
      : 'keep node:dgram'
    : 'n/a (dgram at 500 calls not measured)';
  console.log(`verdict: ${verdict}`);
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL(`./results/${process.env.UDP_RESULTS ?? 'udp-io'}.json`, import.meta.url),
    JSON.stringify(
      {
        bench: 'udp-io',
        date: new Date().toISOString(),
        loadAverageAtStart,
        loadAverage: os.loadavg(),
        packetBytes: PACKET_BYTES,
        packetsPerSecEachWay: PACKETS_PER_SEC,
        host: HOST,
        gatewayCore: 1,
        generatorCore: 0,
        generatorMode: GENERATOR_MODE,
        gatewayModes: {
          dgram: 'one connected dgram socket per call, one send() per packet',
          'native-uring':
            'one native socket per call in a NativeUdpGroup on io_uring: multishot receives, one io_uring_enter and one JS dispatch per loop iteration; one io_uring_enter per tick for all sends',
          'native-poll':
            'one native socket per call in a NativeUdpGroup on the poll backend: one uv_poll and recvmmsg per readable socket, one JS dispatch per loop iteration; one sendMany() per tick, one sendmmsg per socket',
          'native-ungrouped': 'as native-poll, but one JS callback per socket per received batch',
          'shared-uring':
            'one SharedUdpSocket (io_uring) for all calls: one multishot receive, every packet demultiplexed by source address:port in JS; one table of all calls sent per tick with one io_uring_enter; the generator keeps a socket per call',
          'shared-poll': 'as shared-uring on the poll backend: recvmmsg of up to 1024 per wake, one sendmmsg per tick',
          'shared-uring-both':
            'as shared-uring, and the generator also one shared socket (every packet from one address:port)',
          'native-uring-fixed':
            'as native-uring, sockets registered in the rings (IORING_REGISTER_FILES, IOSQE_FIXED_FILE)',
          'shared-uring-fixed': 'as shared-uring, the socket registered in the rings (IOSQE_FIXED_FILE)',
        },
        sharedRatios,
        kernel: os.release(),
        results,
        ratios,
        thresholdCoreFraction: NATIVE_IO_THRESHOLD_CORE_FRACTION,
        verdict,
      },
      null,
      2,
    ) + '\n',
  );
}

if (process.argv[2] === '--side') {
  void side(Number(process.argv[3]), (process.argv[4] ?? 'dgram') as UdpMode);
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
