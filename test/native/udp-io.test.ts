// Native batched UDP I/O (recvmmsg/sendmmsg endpoints of the addon, src/media/udp-native.ts) against real
// node:dgram peers on 127.0.0.1: received bursts (counts, contents, source address and port, batching,
// truncation), sent batches (contents, destinations, source port), a 1024-packet sendmmsg, closing while packets
// arrive, kernel errors as UdpIoError with errno names, and many sockets served by one sendMany call; groups on
// both backends (io_uring where the kernel allows it, and poll): dispatch, bursts beyond a socket's ring and the
// group's receive buffers, truncation, sends by member id with their errors, and closing a member mid-stream;
// one shared socket for many peers (SharedUdpSocket, both backends): packets demultiplexed by source address and
// port, sends to each entry's destination, unknown sources reported, bursts beyond a batch; its peer table.
import t, { type Test } from 'tap';
import dgram from 'node:dgram';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { setImmediate as immediate } from 'node:timers/promises';
import {
  NativeUdpGroup,
  NativeUdpSocket,
  SharedUdpSocket,
  UdpIoError,
  UdpPeerTable,
  ipv4ToUint32,
  uint32ToIpv4,
  type UdpGroupBackend,
  type UdpHandle,
} from '../../src/media/udp-native.js';
import { until } from '../helpers/wait.js';

const HOST = '127.0.0.1';
const LOOPBACK = ipv4ToUint32(HOST);

async function dgramSocket(t: Test, recvBufferSize?: number): Promise<dgram.Socket> {
  const s = dgram.createSocket({ type: 'udp4', recvBufferSize });
  s.on('error', (err) => t.error(err, 'dgram peer error'));
  await new Promise<void>((resolve) => s.bind(0, HOST, resolve));
  t.teardown(() => s.close());
  return s;
}

function open(t: Test, options: Partial<Parameters<typeof NativeUdpSocket.open>[0]> = {}): NativeUdpSocket {
  const s = NativeUdpSocket.open({ host: HOST, port: 0, ...options });
  t.teardown(() => s.close());
  return s;
}

/** Kernel drop counter of a local UDP socket (/proc/net/udp, last column): for failure messages. */
function kernelDrops(port: number): number {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of readFileSync('/proc/net/udp', 'utf8').split('\n')) {
    const cols = line.trim().split(/\s+/);
    if (cols[1] === local) return Number(cols[cols.length - 1]);
  }
  return -1;
}

t.setTimeout(60_000);

t.test('receives a burst from a dgram sender in batches, with contents and the source address and port', async (t) => {
  const rx = open(t, { slots: 64, recvBufferBytes: 2 * 1024 * 1024 });
  t.ok(rx.port > 0, 'bound to a free port');
  const tx = await dgramSocket(t);
  const N = 300;
  const seen = new Map<number, number>();
  const batches: number[] = [];
  rx.onBatch((count, s) => {
    batches.push(count);
    for (let i = 0; i < count; i++) {
      const o = s.rxOffset(i);
      const len = s.rxLength(i);
      t.equal(uint32ToIpv4(s.rxAddress(i)), HOST, 'source address');
      t.equal(s.rxPort(i), tx.address().port, 'source port');
      t.notOk(s.rxTruncated(i));
      const seq = s.rxData[o] * 256 + s.rxData[o + 1];
      t.equal(len, 20 + (seq % 100), `length of packet ${seq}`);
      let ok = true;
      for (let k = 2; k < len; k++) ok &&= s.rxData[o + k] === ((seq + k) & 255);
      if (!ok) t.fail(`payload of packet ${seq}`);
      seen.set(seq, (seen.get(seq) ?? 0) + 1);
    }
  });
  for (let seq = 0; seq < N; seq++) {
    const p = Buffer.alloc(20 + (seq % 100));
    p[0] = seq >> 8;
    p[1] = seq & 255;
    for (let k = 2; k < p.length; k++) p[k] = (seq + k) & 255;
    tx.send(p, rx.port, HOST);
  }
  await until(() => seen.size === N, { what: () => `${N} packets (have ${seen.size}, drops ${kernelDrops(rx.port)})` });
  t.equal(seen.size, N, 'every packet arrived');
  t.ok(
    [...seen.values()].every((c) => c === 1),
    'each exactly once',
  );
  t.equal(
    batches.reduce((a, b) => a + b, 0),
    N,
    'batch counts add up',
  );
  t.ok(
    batches.every((b) => b >= 1 && b <= 64),
    'no batch larger than the ring',
  );
  t.ok(batches.length < N, `packets were batched (${N} packets in ${batches.length} callbacks)`);
  const st = rx.stats();
  t.equal(st.rxPackets, N);
  t.equal(st.rxBatches, batches.length);
  t.equal(st.rxUnhandled, 0);
});

t.test('a datagram longer than a slot is cut to the slot and flagged', async (t) => {
  const rx = open(t, { slots: 4, slotBytes: 100 });
  const tx = await dgramSocket(t);
  const lengths: number[] = [];
  const flags: boolean[] = [];
  rx.onBatch((count, s) => {
    for (let i = 0; i < count; i++) {
      lengths.push(s.rxLength(i));
      flags.push(s.rxTruncated(i));
    }
  });
  tx.send(Buffer.alloc(250, 7), rx.port, HOST);
  await until(() => lengths.length === 1, { what: 'the long datagram' });
  tx.send(Buffer.alloc(100, 7), rx.port, HOST);
  await until(() => lengths.length === 2, { what: 'the fitting datagram' });
  t.same(lengths, [100, 100]);
  t.same(flags, [true, false]);
  t.equal(rx.stats().rxTruncated, 1);
});

t.test('sends one batch to several dgram receivers from the bound port', async (t) => {
  const a = await dgramSocket(t);
  const b = await dgramSocket(t);
  const s = open(t, { txSlots: 64, txBytes: 64 * 200 });
  const got = new Map<string, { from: number; dest: string }>();
  for (const [name, r] of [
    ['a', a],
    ['b', b],
  ] as const) {
    r.on('message', (msg, info) => {
      t.equal(info.address, HOST);
      got.set(msg.toString('latin1'), { from: info.port, dest: name });
    });
  }
  // Payloads written at scattered offsets (backwards) to show the table, not the order, defines the packets.
  const expected = new Map<string, string>();
  for (let i = 0; i < 64; i++) {
    const text = `packet-${i}-${'x'.repeat(i)}`;
    const offset = (63 - i) * 200;
    s.txData.set(Buffer.from(text, 'latin1'), offset);
    const dest = i % 2 === 0 ? a : b;
    s.setTx(i, offset, text.length, LOOPBACK, dest.address().port);
    expected.set(text, i % 2 === 0 ? 'a' : 'b');
  }
  t.equal(s.send(64), 64, 'all 64 accepted by one sendmmsg');
  await until(() => got.size === 64, { what: '64 datagrams' });
  for (const [text, dest] of expected) {
    t.same(got.get(text), { from: s.port, dest }, text);
  }
  t.equal(s.send(0), 0, 'an empty batch is a no-op');
  t.equal(s.stats().txPackets, 64);
  t.equal(s.stats().txDropped, 0);
});

t.test('a 1024-packet batch (the sendmmsg maximum) reaches the receiver', async (t) => {
  const r = await dgramSocket(t, 4 * 1024 * 1024);
  const s = open(t, { txSlots: 1024, slotBytes: 172 });
  const seen = new Set<number>();
  r.on('message', (msg) => seen.add(msg.readUInt32BE(0)));
  for (let i = 0; i < 1024; i++) {
    const o = i * 172;
    s.txData[o] = i >>> 24;
    s.txData[o + 1] = (i >>> 16) & 255;
    s.txData[o + 2] = (i >>> 8) & 255;
    s.txData[o + 3] = i & 255;
    s.setTx(i, o, 172, LOOPBACK, r.address().port);
  }
  t.equal(s.send(1024), 1024, 'sent');
  await until(() => seen.size === 1024, {
    what: () => `1024 datagrams (have ${seen.size}, receiver drops ${kernelDrops(r.address().port)})`,
  });
  t.equal(seen.size, 1024);
  t.throws(() => s.send(1025), RangeError, 'more than the table holds is a RangeError');
});

t.test('closing inside onBatch while a sender keeps sending stops the callbacks at once', async (t) => {
  const rx = open(t, { slots: 8 });
  const tx = await dgramSocket(t);
  let sending = true;
  const payload = Buffer.alloc(172, 0x55);
  const pump = async () => {
    while (sending) {
      for (let i = 0; i < 50; i++) tx.send(payload, rx.port, HOST);
      await immediate();
    }
  };
  let calls = 0;
  rx.onBatch(() => {
    calls++;
    rx.close();
    rx.close(); // idempotent, even inside the callback
  });
  const pumping = pump();
  await until(() => calls > 0, { what: 'the first batch' });
  // Keep sending for a while: the closed socket must not call back again (its port is gone).
  for (let i = 0; i < 50; i++) await immediate();
  sending = false;
  await pumping;
  t.equal(calls, 1, 'exactly one batch before close');
  t.ok(rx.isClosed);
  t.throws(() => rx.send(0), { name: 'UdpIoError', code: 'EBADF' }, 'send after close');
  // The port is free again: another socket can bind it.
  const again = open(t, { port: rx.port });
  t.equal(again.port, rx.port, 'port released by close');
});

t.test('closing from outside while packets stream in, then the process stays clean', async (t) => {
  const rx = open(t, { slots: 4 });
  const tx = await dgramSocket(t);
  let received = 0;
  rx.onBatch((count) => {
    received += count;
  });
  let sending = true;
  const pump = async () => {
    while (sending) {
      for (let i = 0; i < 20; i++) tx.send(Buffer.alloc(40), rx.port, HOST);
      await immediate();
    }
  };
  const pumping = pump();
  await until(() => received >= 100, { what: '100 packets' });
  rx.close();
  const atClose = received;
  for (let i = 0; i < 50; i++) await immediate();
  sending = false;
  await pumping;
  t.equal(received, atClose, 'nothing delivered after close');
  t.equal(rx.stats().rxPackets, atClose, 'stats readable after close');
});

t.test('kernel errors surface as UdpIoError with errno names', async (t) => {
  t.throws(() => NativeUdpSocket.open({ host: 'not-an-address', port: 0 }), { name: 'UdpIoError', code: 'EINVAL' });
  const first = open(t);
  t.throws(() => NativeUdpSocket.open({ host: HOST, port: first.port }), { name: 'UdpIoError', code: 'EADDRINUSE' });
  // RFC 5737 TEST-NET-1: never a local address.
  t.throws(() => NativeUdpSocket.open({ host: '192.0.2.1', port: 0 }), { name: 'UdpIoError', code: 'EADDRNOTAVAIL' });
  t.throws(() => NativeUdpSocket.open({ host: HOST, port: 70000 }), RangeError);

  const r = await dgramSocket(t);
  const got: string[] = [];
  r.on('message', (m) => got.push(m.toString()));
  const s = open(t);
  s.txData.set(Buffer.from('ok'), 0);
  s.setTx(0, 0, 2, LOOPBACK, r.address().port);
  // Limited broadcast without SO_BROADCAST: the kernel refuses with EACCES.
  s.setTx(1, 0, 2, ipv4ToUint32('255.255.255.255'), 9);
  s.setTx(2, 0, 2, LOOPBACK, r.address().port);
  const err = t.throws(() => s.send(3), {
    name: 'UdpIoError',
    code: 'EACCES',
    syscall: 'sendmmsg',
    index: 1,
  }) as unknown;
  t.ok(err instanceof UdpIoError);
  await until(() => got.length === 1, { what: 'the packet before the failing one' });
  t.same(got, ['ok'], 'packets before the failure were sent, the one after was not');

  s.setTx(0, s.txData.length - 1, 2, LOOPBACK, r.address().port);
  t.throws(() => s.send(1), RangeError, 'entry outside the send buffer');
  s.setTx(0, 0, 2, LOOPBACK, 0);
  t.throws(() => s.send(1), RangeError, 'port 0');
  t.throws(() => ipv4ToUint32('1.2.3.256'), RangeError);
});

t.test("200 sockets, one sendMany call: each gets its neighbour's packet from its neighbour's port", async (t) => {
  const N = 200;
  const sockets: NativeUdpSocket[] = [];
  const received: Array<{ from: number; value: number } | undefined> = new Array(N);
  for (let i = 0; i < N; i++) {
    const s = open(t, { slots: 4, txSlots: 2, slotBytes: 64 });
    const me = i;
    s.onBatch((count, sock) => {
      for (let k = 0; k < count; k++) {
        t.equal(received[me], undefined, `socket ${me} receives once`);
        received[me] = {
          from: sock.rxPort(k),
          value: sock.rxData[sock.rxOffset(k)] + 256 * sock.rxData[sock.rxOffset(k) + 1],
        };
      }
    });
    sockets.push(s);
  }
  const handles: UdpHandle[] = sockets.map((s) => s.handle);
  const counts = new Uint32Array(N);
  const sent = new Uint32Array(N);
  for (let i = 0; i < N; i++) {
    const s = sockets[i];
    s.txData[0] = i & 255;
    s.txData[1] = i >> 8;
    s.setTx(0, 0, 2, LOOPBACK, sockets[(i + 1) % N].port);
    counts[i] = 1;
  }
  NativeUdpSocket.sendMany(handles, counts, sent);
  t.ok(
    sent.every((n) => n === 1),
    'each socket sent its packet',
  );
  await until(() => received.filter(Boolean).length === N, { what: `${N} packets` });
  for (let i = 0; i < N; i++) {
    const prev = (i + N - 1) % N;
    t.same(received[i], { from: sockets[prev].port, value: prev }, `socket ${i}`);
  }
  sockets[5].close();
  t.throws(
    () => NativeUdpSocket.sendMany(handles, counts, sent),
    { name: 'UdpIoError', code: 'EBADF' },
    'a closed socket in the group',
  );
  t.same([...sent.subarray(0, 5)], [1, 1, 1, 1, 1], 'the sockets before it sent');
  t.equal(sent[5], 0);
});

/** io_uring where this kernel allows it (a container's seccomp profile may not): its tests are skipped otherwise. */
function uringAvailable(): boolean {
  try {
    new NativeUdpGroup(1, { backend: 'io_uring' }).close();
    return true;
  } catch (err) {
    if (err instanceof UdpIoError) return false;
    throw err;
  }
}
const BACKENDS: UdpGroupBackend[] = uringAvailable() ? ['io_uring', 'poll'] : ['poll'];

t.test('a group picks io_uring where it can and poll when asked', async (t) => {
  const auto = new NativeUdpGroup(1);
  t.teardown(() => auto.close());
  t.equal(auto.backend, BACKENDS[0], `auto chose ${auto.backend}`);
  const poll = new NativeUdpGroup(1, { backend: 'poll' });
  t.teardown(() => poll.close());
  t.equal(poll.backend, 'poll');
  t.throws(() => new NativeUdpGroup(1, { payloadBytes: 0 }), RangeError);
});

for (const backend of BACKENDS) {
  t.test(
    `${backend}: a group hands many sockets' batches to JavaScript in a few dispatches, each to its socket`,
    async (t) => {
      const N = 100;
      const group = new NativeUdpGroup(N, { backend });
      t.equal(group.backend, backend);
      t.teardown(() => group.close());
      const sockets: NativeUdpSocket[] = [];
      const got: Array<{ from: number; value: number } | undefined> = new Array(N);
      for (let i = 0; i < N; i++) {
        const me = i;
        const s = open(t, { group, slots: 4 });
        s.onBatch((count, sock) => {
          t.equal(count, 1, `socket ${me}: one packet`);
          t.equal(got[me], undefined, `socket ${me} receives once`);
          got[me] = { from: sock.rxPort(0), value: sock.rxData[0] };
        });
        sockets.push(s);
      }
      t.throws(
        () => NativeUdpSocket.open({ host: HOST, port: 0, group }),
        RangeError,
        'a full group refuses another socket',
      );
      const tx = await dgramSocket(t);
      for (let i = 0; i < N; i++) tx.send(Buffer.from([i]), sockets[i].port, HOST);
      await until(() => got.filter(Boolean).length === N, { what: `${N} packets` });
      for (let i = 0; i < N; i++) t.same(got[i], { from: tx.address().port, value: i }, `socket ${i}`);
      t.ok(group.dispatches >= 1 && group.dispatches < N, `${N} sockets served in ${group.dispatches} dispatches`);

      // Closing a member frees its place; the newcomer receives through the same group.
      sockets[0].close();
      let late = -1;
      const s = open(t, { group }).onBatch((count, sock) => {
        late = sock.rxData[0];
      });
      tx.send(Buffer.from([42]), s.port, HOST);
      await until(() => late === 42, { what: "the newcomer's packet" });
      t.equal(late, 42);
    },
  );

  t.test(
    `${backend}: a socket closed during a group dispatch gets no more batches, and its place is not reused in it`,
    async (t) => {
      const group = new NativeUdpGroup(2, { backend });
      t.teardown(() => group.close());
      const a = open(t, { group });
      const b = open(t, { group });
      const tx = await dgramSocket(t);
      const seen: string[] = [];
      const onBatch = (name: string) => () => {
        seen.push(name);
        if (seen.length === 1) {
          // Whichever comes first closes the other; its place is not free until the dispatch ends.
          (name === 'a' ? b : a).close();
          t.throws(
            () => NativeUdpSocket.open({ host: HOST, port: 0, group }),
            RangeError,
            'no place during the dispatch',
          );
        }
      };
      a.onBatch(onBatch('a'));
      b.onBatch(onBatch('b'));
      // Both packets sent before the loop polls: both sockets are ready in the same iteration.
      tx.send(Buffer.from([1]), a.port, HOST);
      tx.send(Buffer.from([2]), b.port, HOST);
      await until(() => seen.length >= 1, { what: 'the first batch' });
      for (let i = 0; i < 20; i++) await immediate();
      t.equal(seen.length, 1, `only the first socket's batch was delivered (${seen.join(', ')})`);
      const newcomer = open(t, { group });
      t.ok(newcomer.port > 0, 'after the dispatch the freed place takes a newcomer');
    },
  );

  t.test(
    `${backend}: a burst larger than a socket's ring and than the group's receive buffers arrives whole, in ring-sized batches`,
    async (t) => {
      // 1024 packets sent synchronously before the loop runs: the io_uring backend has 256 provided buffers here, so
      // its receive stops for lack of buffers (ENOBUFS) and is re-armed; the socket's 16-slot ring fills many times.
      const group = new NativeUdpGroup(2, { backend, payloadBytes: 172 });
      t.teardown(() => group.close());
      const rx = open(t, { group, slots: 16, slotBytes: 172, recvBufferBytes: 4 * 1024 * 1024 });
      const tx = open(t, { txSlots: 1024, slotBytes: 172 });
      const seen = new Set<number>();
      const batches: number[] = [];
      let bad = 0;
      rx.onBatch((count, s) => {
        batches.push(count);
        for (let i = 0; i < count; i++) {
          const o = s.rxOffset(i);
          const seq = s.rxData[o] * 256 + s.rxData[o + 1];
          if (s.rxLength(i) !== 172 || s.rxPort(i) !== tx.port || s.rxData[o + 171] !== (seq & 255)) bad++;
          seen.add(seq);
        }
      });
      for (let i = 0; i < 1024; i++) {
        const o = i * 172;
        tx.txData[o] = i >> 8;
        tx.txData[o + 1] = i & 255;
        tx.txData[o + 171] = i & 255;
        tx.setTx(i, o, 172, LOOPBACK, rx.port);
      }
      t.equal(tx.send(1024), 1024);
      await until(() => seen.size === 1024, {
        what: () => `1024 packets (have ${seen.size}, drops ${kernelDrops(rx.port)})`,
      });
      t.equal(bad, 0, 'lengths, source port and contents');
      t.ok(
        batches.every((b) => b >= 1 && b <= 16),
        "no batch larger than the socket's ring",
      );
      t.equal(
        batches.reduce((a, b) => a + b, 0),
        1024,
        'each packet once',
      );
      t.equal(rx.stats().rxPackets, 1024);
    },
  );

  t.test(`${backend}: a datagram longer than the socket's slot is cut and flagged`, async (t) => {
    const group = new NativeUdpGroup(1, { backend, payloadBytes: 1500 });
    t.teardown(() => group.close());
    const rx = open(t, { group, slots: 4, slotBytes: 100 });
    const tx = await dgramSocket(t);
    const got: Array<[number, boolean, number]> = [];
    rx.onBatch((count, s) => {
      for (let i = 0; i < count; i++) got.push([s.rxLength(i), s.rxTruncated(i), s.rxData[s.rxOffset(i) + 99]]);
    });
    tx.send(Buffer.alloc(250, 7), rx.port, HOST);
    await until(() => got.length === 1, { what: 'the long datagram' });
    tx.send(Buffer.alloc(100, 8), rx.port, HOST);
    await until(() => got.length === 2, { what: 'the fitting datagram' });
    t.same(got, [
      [100, true, 7],
      [100, false, 8],
    ]);
    t.equal(rx.stats().rxTruncated, 1);
  });

  t.test(
    `${backend}: group.sendMany sends each member's table by id, and names the member and packet that failed`,
    async (t) => {
      const N = 50;
      const group = new NativeUdpGroup(N, { backend });
      t.teardown(() => group.close());
      const sockets: NativeUdpSocket[] = [];
      const got: Array<{ from: number; value: number } | undefined> = new Array(N);
      for (let i = 0; i < N; i++) {
        const me = i;
        const s = open(t, { group, txSlots: 2 }).onBatch((count, sock) => {
          got[me] = { from: sock.rxPort(0), value: sock.rxData[0] };
        });
        sockets.push(s);
      }
      const ids = Uint32Array.from(sockets, (s) => s.groupId);
      const counts = new Uint32Array(N).fill(1);
      const sent = new Uint32Array(N);
      for (let i = 0; i < N; i++) {
        sockets[i].txData[0] = i;
        sockets[i].setTx(0, 0, 1, LOOPBACK, sockets[(i + 1) % N].port);
      }
      group.sendMany(ids, counts, sent);
      t.ok(
        sent.every((n) => n === 1),
        'each member sent its packet',
      );
      await until(() => got.filter(Boolean).length === N, { what: `${N} packets` });
      for (let i = 0; i < N; i++)
        t.same(got[i], { from: sockets[(i + N - 1) % N].port, value: (i + N - 1) % N }, `socket ${i}`);
      t.equal(sockets[0].stats().txPackets, 1);

      // The same members through NativeUdpSocket.sendMany (handles): the same packets.
      got.fill(undefined);
      NativeUdpSocket.sendMany(
        sockets.map((s) => s.handle),
        counts,
        sent,
      );
      t.ok(
        sent.every((n) => n === 1),
        'each member sent its packet by handle',
      );
      await until(() => got.filter(Boolean).length === N, { what: `${N} packets sent by handle` });
      t.same(got[7], { from: sockets[6].port, value: 6 });
      t.equal(sockets[0].stats().txPackets, 2);

      // Member 3's second packet goes to the limited broadcast address without SO_BROADCAST: EACCES.
      got.fill(undefined);
      sockets[3].setTx(1, 0, 1, ipv4ToUint32('255.255.255.255'), 9);
      counts[3] = 2;
      const err = t.throws(() => group.sendMany(ids, counts, sent), {
        name: 'UdpIoError',
        code: 'EACCES',
        handleIndex: 3,
        index: 1,
      });
      t.ok(err instanceof UdpIoError);
      t.equal(sent[3], 1, 'its first packet went out');
      t.ok(
        sent.subarray(0, 3).every((n) => n === 1),
        'the members before it sent',
      );
      await until(() => got[4] !== undefined, { what: 'the packet of member 3 before the failing one' });

      // A closed member: EBADF naming its position; the members before it sent.
      counts[3] = 1;
      sockets[10].close();
      t.throws(() => group.sendMany(ids, counts, sent, 20), { name: 'UdpIoError', code: 'EBADF', handleIndex: 10 });
      t.ok(
        sent.subarray(0, 10).every((n) => n === 1),
        'the members before it sent',
      );
      t.equal(sent[10], 0);
      t.throws(() => group.sendMany(ids, counts, sent, N + 1), RangeError, 'n beyond the arrays');
    },
  );

  t.test(
    `${backend}: a member closed while packets stream in gets nothing more and its port is free at once`,
    async (t) => {
      const group = new NativeUdpGroup(4, { backend });
      t.teardown(() => group.close());
      const rx = open(t, { group, slots: 4 });
      const other = open(t, { group, slots: 4 });
      const tx = await dgramSocket(t);
      let received = 0;
      let otherReceived = 0;
      rx.onBatch((count) => {
        received += count;
      });
      other.onBatch((count) => {
        otherReceived += count;
      });
      let sending = true;
      const pump = async () => {
        while (sending) {
          for (let i = 0; i < 20; i++) {
            tx.send(Buffer.alloc(40), rx.port, HOST);
            tx.send(Buffer.alloc(40), other.port, HOST);
          }
          await immediate();
        }
      };
      const pumping = pump();
      await until(() => received >= 100, { what: '100 packets' });
      const port = rx.port;
      rx.close();
      const atClose = received;
      const again = open(t, { port });
      t.equal(again.port, port, 'the port binds again right after close');
      again.close();
      const otherAtClose = otherReceived;
      for (let i = 0; i < 50; i++) await immediate();
      sending = false;
      await pumping;
      t.equal(received, atClose, 'nothing delivered after close');
      await until(() => otherReceived > otherAtClose, { what: 'the other member still receiving' });
      t.ok(otherReceived > otherAtClose, 'the other member kept receiving');
    },
  );
}

t.test(
  "io_uring: a flood beyond one wake's budget (1024) all arrives, and the loop runs between wakes",
  { skip: !BACKENDS.includes('io_uring') },
  async (t) => {
    // 3072 datagrams queued in the kernel before the loop polls: one wake hands over at most 1024 (the per-wake
    // budget), and the loop's check phase (setImmediate) runs before the rest arrives.
    const group = new NativeUdpGroup(3, { backend: 'io_uring', payloadBytes: 64 });
    t.teardown(() => group.close());
    let delivered = 0;
    const receivers = Array.from({ length: 3 }, () =>
      open(t, { group, slots: 1024, slotBytes: 64, recvBufferBytes: 4 * 1024 * 1024 }).onBatch((count) => {
        delivered += count;
      }),
    );
    const tx = open(t, { txSlots: 1024, slotBytes: 64 });
    for (const rx of receivers) {
      for (let i = 0; i < 1024; i++) tx.setTx(i, 0, 64, LOOPBACK, rx.port);
      t.equal(tx.send(1024), 1024);
    }
    let atImmediate = -1;
    setImmediate(() => {
      atImmediate = delivered;
    });
    await until(() => delivered === 3072, { what: () => `3072 datagrams (have ${delivered})` });
    t.ok(atImmediate >= 0 && atImmediate <= 1024, `the loop ran between slices (${atImmediate} delivered by then)`);
  },
);

/** Runs a script in a child Node (with tsx) and returns its exit code and stderr. */
async function runChild(source: string): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
    cwd: new URL('../..', import.meta.url).pathname,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stderr })));
}

t.test('an exception thrown by onBatch is an uncaught exception, not swallowed', async (t) => {
  const r = await runChild(`
    import dgram from 'node:dgram';
    import { NativeUdpSocket } from './src/media/udp-native.ts';
    const s = NativeUdpSocket.open({ host: '127.0.0.1', port: 0 });
    s.onBatch(() => { throw new Error('thrown-from-onBatch'); });
    const d = dgram.createSocket('udp4');
    d.send(Buffer.from('x'), s.port, '127.0.0.1', () => d.close());
  `);
  t.not(r.code, 0, 'the process failed');
  t.match(r.stderr, /thrown-from-onBatch/, 'with the thrown error');
});

const UDP_MODULE = new URL('../../src/media/udp-native.ts', import.meta.url).href;
const TSX_API = import.meta.resolve('tsx/esm/api');

t.test('open sockets are closed cleanly when a worker thread ends and when the process exits', async (t) => {
  // Workers need tsx registered by an evaluated bootstrap (see src/workers/worker-pool.ts).
  const workerSource = `import(${JSON.stringify(TSX_API)}).then(async (m) => {
    m.register();
    const { NativeUdpGroup, NativeUdpSocket } = await import(${JSON.stringify(UDP_MODULE)});
    const { parentPort } = await import('node:worker_threads');
    const sockets = [];
    // Half on their own, half in a group (io_uring where available): both are closed by the cleanup hooks.
    const group = new NativeUdpGroup(10);
    for (let i = 0; i < 20; i++) sockets.push(NativeUdpSocket.open({ host: '127.0.0.1', port: 0, group: i % 2 ? group : undefined }).onBatch(() => {}));
    parentPort.postMessage(sockets.map((s) => s.port));
  });`;
  const r = await runChild(`
    import { Worker } from 'node:worker_threads';
    import { NativeUdpSocket } from ${JSON.stringify(UDP_MODULE)};
    const w = new Worker(${JSON.stringify(workerSource)}, { eval: true });
    const ports = await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
    await w.terminate();
    // The worker's ports are free again: its environment's cleanup hook closed them.
    const again = ports.map((port) => NativeUdpSocket.open({ host: '127.0.0.1', port }));
    process.stderr.write('rebound ' + again.length + '\\n');
    // Exit with these sockets still open.
    setTimeout(() => process.exit(0), 10);
  `);
  t.equal(r.signal, null, 'no crash');
  t.equal(r.code, 0, `clean exit (stderr: ${r.stderr.slice(0, 500)})`);
  t.match(r.stderr, /rebound 20/, "the worker's 20 ports were released");
});

t.test(
  'a peer table finds, replaces and forgets peers, and stays right through colliding inserts and deletes',
  async (t) => {
    const table = new UdpPeerTable(3);
    t.equal(table.get(LOOPBACK, 5000), -1, 'empty');
    table.set(LOOPBACK, 5000, 7);
    table.set(LOOPBACK + 1, 5000, 8);
    table.set(LOOPBACK, 5002, 9);
    t.same(
      [table.get(LOOPBACK, 5000), table.get(LOOPBACK + 1, 5000), table.get(LOOPBACK, 5002), table.size],
      [7, 8, 9, 3],
    );
    t.throws(() => table.set(LOOPBACK, 6000, 1), RangeError, 'a full table refuses a new peer');
    table.set(LOOPBACK, 5000, 70);
    t.equal(table.get(LOOPBACK, 5000), 70, 'replaced in place while full');
    t.ok(table.delete(LOOPBACK + 1, 5000));
    t.notOk(table.delete(LOOPBACK + 1, 5000), 'already gone');
    t.equal(table.get(LOOPBACK + 1, 5000), -1);
    t.throws(() => table.set(LOOPBACK, 70000, 1), RangeError, 'port out of range');

    // Against a Map, with a seeded LCG: 64 peers in 128 slots churned 20000 times (long probe runs, wrap-around).
    const big = new UdpPeerTable(64);
    const model = new Map<number, number>();
    let seed = 12345;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    let wrong = 0;
    for (let step = 0; step < 20000; step++) {
      const address = 0x0a000000 + rand(4);
      const port = 10000 + rand(40);
      const key = address * 65536 + port;
      if (model.has(key) && rand(2) === 0) {
        big.delete(address, port);
        model.delete(key);
      } else if (model.has(key) || model.size < 64) {
        big.set(address, port, step);
        model.set(key, step);
      }
      const a2 = 0x0a000000 + rand(4);
      const p2 = 10000 + rand(40);
      if (big.get(a2, p2) !== (model.get(a2 * 65536 + p2) ?? -1)) wrong++;
    }
    for (const [key, id] of model) if (big.get(Math.floor(key / 65536), key % 65536) !== id) wrong++;
    t.equal(wrong, 0, 'every lookup agreed with the Map');
    t.equal(big.size, model.size, 'same size');
  },
);

for (const backend of BACKENDS) {
  function shared(t: Test, options: Partial<Parameters<typeof SharedUdpSocket.open>[0]> = {}): SharedUdpSocket {
    const s = SharedUdpSocket.open({ host: HOST, port: 0, maxPeers: 64, backend, ...options });
    t.teardown(() => s.close());
    return s;
  }

  t.test(`${backend}: a shared socket hands each peer's packets to that peer's id, with their source`, async (t) => {
    const s = shared(t);
    t.equal(s.backend, backend);
    const peers: dgram.Socket[] = [];
    for (let i = 0; i < 5; i++) {
      const p = await dgramSocket(t);
      s.peers.set(LOOPBACK, p.address().port, 100 + i);
      peers.push(p);
    }
    const got: Array<[number, number, number]> = [];
    s.onPacket((id, i, sock) => {
      t.equal(uint32ToIpv4(sock.rxAddress(i)), HOST);
      got.push([id, sock.rxPort(i), sock.rxData[sock.rxOffset(i)]]);
    });
    for (let round = 0; round < 3; round++)
      for (let i = 0; i < peers.length; i++) peers[i].send(Buffer.from([round * 10 + i]), s.port, HOST);
    await until(() => got.length === 15, { what: '15 packets' });
    for (let i = 0; i < peers.length; i++) {
      const mine = got.filter(([id]) => id === 100 + i);
      t.same(
        mine.map(([, port, v]) => [port, v]),
        [0, 1, 2].map((r) => [peers[i].address().port, r * 10 + i]),
        `peer ${i}: its 3 packets in order`,
      );
    }
    t.equal(s.unknownPackets, 0);
  });

  t.test(
    `${backend}: packets from unknown sources are reported with their source and counted, never lost`,
    async (t) => {
      const s = shared(t);
      const known = await dgramSocket(t);
      const stranger = await dgramSocket(t);
      s.peers.set(LOOPBACK, known.address().port, 1);
      let fromKnown = 0;
      s.onPacket(() => fromKnown++);
      // No onUnknown listener yet: counted only.
      stranger.send(Buffer.from([1]), s.port, HOST);
      await until(() => s.unknownPackets === 1, { what: 'the first unknown packet' });
      const unknown: Array<[number, number]> = [];
      s.onUnknown((i, sock) => unknown.push([sock.rxPort(i), sock.rxData[sock.rxOffset(i)]]));
      stranger.send(Buffer.from([2]), s.port, HOST);
      known.send(Buffer.from([3]), s.port, HOST);
      await until(() => unknown.length === 1 && fromKnown === 1, { what: 'the second unknown and the known packet' });
      t.same(unknown, [[stranger.address().port, 2]], "the stranger's packet with its port");
      t.equal(s.unknownPackets, 2, 'both unknown packets counted');
      // Latching the stranger (as symmetric RTP behind NAT would) makes it a known peer.
      s.peers.set(LOOPBACK, stranger.address().port, 2);
      const ids: number[] = [];
      s.onPacket((id) => ids.push(id));
      stranger.send(Buffer.from([4]), s.port, HOST);
      await until(() => ids.length === 1, { what: "the latched peer's packet" });
      t.same(ids, [2]);
      t.equal(s.unknownPackets, 2);
    },
  );

  t.test(
    `${backend}: one send from a shared socket reaches each entry's destination from the shared port`,
    async (t) => {
      const s = shared(t, { txSlots: 64 });
      const N = 40;
      const receivers: dgram.Socket[] = [];
      const got = new Array<[number, number] | undefined>(N);
      for (let i = 0; i < N; i++) {
        const r = await dgramSocket(t);
        const me = i;
        r.on('message', (msg, rinfo) => {
          got[me] = [rinfo.port, msg[0]];
        });
        receivers.push(r);
      }
      for (let i = 0; i < N; i++) {
        s.socket.txData[i] = i;
        s.socket.setTx(i, i, 1, LOOPBACK, receivers[i].address().port);
      }
      t.equal(s.send(N), N, 'all sent');
      await until(() => got.filter(Boolean).length === N, { what: `${N} packets` });
      for (let i = 0; i < N; i++) t.same(got[i], [s.port, i], `receiver ${i}`);
      t.throws(() => s.send(65), RangeError, 'more than the table holds');
    },
  );

  t.test(`${backend}: a burst from many peers beyond a batch and the receive buffers arrives whole`, async (t) => {
    // 256 provided buffers (io_uring) and 64-slot batches against 3000 packets from 30 peers.
    const s = shared(t, { slots: 64, receiveBuffers: 256 });
    const PEERS = 30;
    const PER_PEER = 100;
    const counts = new Uint32Array(PEERS);
    const next = new Uint32Array(PEERS);
    let disorder = 0;
    s.onPacket((id, i, sock) => {
      const o = sock.rxOffset(i);
      if (sock.rxData[o] * 256 + sock.rxData[o + 1] !== next[id]) disorder++;
      next[id]++;
      counts[id]++;
    });
    const peers: dgram.Socket[] = [];
    for (let i = 0; i < PEERS; i++) {
      const p = await dgramSocket(t);
      s.peers.set(LOOPBACK, p.address().port, i);
      peers.push(p);
    }
    for (let seq = 0; seq < PER_PEER; seq++) {
      for (const p of peers) p.send(Buffer.from([seq >> 8, seq & 255, 0xd5, 0xd5]), s.port, HOST);
      if (seq % 10 === 9) await immediate();
    }
    const total = () => counts.reduce((a, b) => a + b, 0);
    await until(() => total() === PEERS * PER_PEER, {
      what: () => `${PEERS * PER_PEER} packets (kernel drops: ${kernelDrops(s.port)})`,
    });
    t.equal(total(), PEERS * PER_PEER);
    t.equal(disorder, 0, "each peer's packets in order");
    t.ok(s.socket.stats().rxBatches > 1, `in ${s.socket.stats().rxBatches} batches`);
  });
}

/** Per io_uring instance of this process with registered files: how many are sockets (/proc/self/fdinfo). */
function registeredSockets(): number[] {
  const out: number[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // the directory's own descriptor, closed by now
    }
    if (!target.includes('io_uring')) continue;
    const info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
    if (!/UserFiles:\s*[1-9]/.test(info)) continue;
    out.push(info.split('\n').filter((line) => /^\s*\d+: socket:/.test(line)).length);
  }
  return out;
}

t.test(
  'io_uring with registered files: members receive and send through their slots, and a closed member lets go of its port',
  { skip: !BACKENDS.includes('io_uring') },
  async (t) => {
    const N = 8;
    const group = new NativeUdpGroup(N, { backend: 'io_uring', fixedFiles: true });
    t.teardown(() => group.close());
    const peer = await dgramSocket(t);
    const fromPeer: number[] = [];
    const toPeer: Array<[number, number]> = [];
    peer.on('message', (msg, rinfo) => toPeer.push([rinfo.port, msg[0]]));
    const sockets: NativeUdpSocket[] = [];
    for (let i = 0; i < N; i++) {
      const s = open(t, { group, txSlots: 1 });
      s.onBatch((count, sock) => {
        for (let k = 0; k < count; k++) fromPeer.push(sock.rxData[sock.rxOffset(k)] * 100 + sock.groupId);
      });
      s.txData[0] = i;
      s.setTx(0, 0, 1, LOOPBACK, peer.address().port);
      sockets.push(s);
    }
    t.same(registeredSockets(), [N, N], `both rings list the ${N} sockets as registered files`);
    for (let i = 0; i < N; i++) peer.send(Buffer.from([i]), sockets[i].port, HOST);
    await until(() => fromPeer.length === N, { what: `${N} packets in` });
    t.same(
      fromPeer.sort((a, b) => a - b),
      sockets.map((s, i) => i * 100 + s.groupId),
      'each socket got its packet',
    );
    const ids = Uint32Array.from(sockets, (s) => s.groupId);
    const sent = new Uint32Array(N);
    group.sendMany(ids, new Uint32Array(N).fill(1), sent);
    t.same([...sent], new Array(N).fill(1), 'each member sent its packet');
    await until(() => toPeer.length === N, { what: `${N} packets out` });
    t.same(
      toPeer.sort((a, b) => a[1] - b[1]),
      sockets.map((s, i) => [s.port, i]),
      "from each member's port",
    );
    // Closing clears the slot: the ring holds no reference, the port can be bound again at once (twice, to reuse the slot).
    for (let round = 0; round < 2; round++) {
      const port = sockets[0].port;
      sockets[0].close();
      t.same(registeredSockets(), [N - 1, N - 1], `round ${round}: the closed socket's slot is cleared`);
      const again = open(t, { host: HOST, port });
      t.equal(again.port, port, `round ${round}: port ${port} rebound at once`);
      again.close();
      sockets[0] = open(t, { group });
      let got = -1;
      sockets[0].onBatch((count, sock) => {
        got = sock.rxData[sock.rxOffset(0)];
      });
      peer.send(Buffer.from([77 + round]), sockets[0].port, HOST);
      await until(() => got === 77 + round, { what: "the newcomer's packet through the reused slot" });
    }
  },
);
