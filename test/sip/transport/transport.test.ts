// Transport over real UDP and TCP sockets on 127.0.0.1: rport/received, response routing by Via,
// TCP connection reuse, the 1300-byte switch to TCP, CRLF keep-alive, stream framing, typed errors.
import dgram from 'node:dgram';
import net from 'node:net';
import { once } from 'node:events';
import t, { type Test } from 'tap';
import { MAX_TCP_CONNECTIONS_PER_ADDRESS, SipTransport, type Source } from '../../../sip/transport/index.js';
import { TransactionLayer, type ServerTransaction } from '../../../sip/transaction/index.js';
import {
  createResponse,
  parseMessage,
  serializeMessage,
  topVia,
  type SipMessage,
  type SipRequest,
} from '../../../sip/message/index.js';
import { SipParseError, TransportError } from '../../../sip/errors.js';

t.setTimeout(20_000);

interface Received {
  msg: SipMessage;
  source: Source;
}

/** A transport that queues what it receives. */
async function endpoint() {
  const inbox: Received[] = [];
  const invalid: Array<{ err: SipParseError; source: Source }> = [];
  const waiters: Array<() => void> = [];
  const transport = await SipTransport.listen(
    {
      message: (msg, source) => {
        inbox.push({ msg, source });
        waiters.splice(0).forEach((w) => w());
      },
      invalid: (err, source) => {
        invalid.push({ err, source });
        waiters.splice(0).forEach((w) => w());
      },
    },
    { host: '127.0.0.1', port: 0 },
  );
  const next = async (): Promise<Received> => {
    while (inbox.length === 0) await new Promise<void>((r) => waiters.push(r));
    return inbox.shift()!;
  };
  const nextInvalid = async () => {
    while (invalid.length === 0) await new Promise<void>((r) => waiters.push(r));
    return invalid.shift()!;
  };
  return { transport, next, nextInvalid, inbox };
}

function request(method: string, via: string, extra: string[] = [], body = ''): string {
  return [
    `${method} sip:bob@127.0.0.1 SIP/2.0`,
    `Via: ${via}`,
    'Max-Forwards: 70',
    'To: <sip:bob@127.0.0.1>',
    'From: <sip:alice@127.0.0.1>;tag=a1',
    `Call-ID: ${Math.random().toString(36).slice(2)}@test`,
    `CSeq: 1 ${method}`,
    ...extra,
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

async function udpSocket(): Promise<dgram.Socket> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  return s;
}

t.test('UDP: rport and received are stamped, the response goes back to the source port (RFC 3581)', async (t) => {
  const b = await endpoint();
  t.teardown(() => b.transport.close());
  const client = await udpSocket();
  t.teardown(() => client.close());
  const clientPort = client.address().port;
  // sent-by names port 9 and another host: only received/rport can route the response back
  client.send(request('OPTIONS', 'SIP/2.0/UDP client.invalid:9;branch=z9hG4bKr1;rport'), b.transport.port, '127.0.0.1');
  const { msg, source } = await b.next();
  t.equal(source.transport, 'UDP');
  t.equal(source.port, clientPort);
  const via = topVia(msg);
  t.equal(via.params.get('rport'), String(clientPort), 'rport filled with the source port');
  t.equal(via.params.get('received'), '127.0.0.1', 'received added');
  const got = once(client, 'message');
  await b.transport.sendResponse(createResponse(msg as SipRequest, 200));
  const [data] = (await got) as [Buffer];
  const res = parseMessage(data);
  t.ok(res.kind === 'response' && res.status === 200, 'response arrived at the source port');
  t.equal(topVia(res).params.get('rport'), String(clientPort), 'response carries the stamped Via');
});

t.test('UDP without rport: the response goes to the Via sent-by port (RFC 3261 18.2.2)', async (t) => {
  const b = await endpoint();
  t.teardown(() => b.transport.close());
  const sender = await udpSocket();
  const listener = await udpSocket();
  t.teardown(() => {
    sender.close();
    listener.close();
  });
  const viaPort = listener.address().port;
  sender.send(request('OPTIONS', `SIP/2.0/UDP 127.0.0.1:${viaPort};branch=z9hG4bKr2`), b.transport.port, '127.0.0.1');
  const { msg } = await b.next();
  t.equal(topVia(msg).params.has('received'), false, 'no received when sent-by is the source address');
  const got = once(listener, 'message');
  await b.transport.sendResponse(createResponse(msg as SipRequest, 486));
  const [data] = (await got) as [Buffer];
  const res = parseMessage(data);
  t.ok(res.kind === 'response' && res.status === 486, 'response at the sent-by port, not the source port');
});

t.test('TCP: responses and later requests reuse the connection a request arrived on', async (t) => {
  const b = await endpoint();
  t.teardown(() => b.transport.close());
  const sock = net.connect(b.transport.port, '127.0.0.1');
  await once(sock, 'connect');
  t.teardown(() => sock.destroy());
  const chunks: Buffer[] = [];
  sock.on('data', (d) => chunks.push(d));
  const waitFor = async (re: RegExp) => {
    while (!re.test(Buffer.concat(chunks).toString())) await once(sock, 'data');
  };
  sock.write(request('INVITE', 'SIP/2.0/TCP 127.0.0.1:1;branch=z9hG4bKt1'));
  const { msg, source } = await b.next();
  t.equal(source.transport, 'TCP');
  t.equal(b.transport.tcpConnectionCount, 1);
  await b.transport.sendResponse(createResponse(msg as SipRequest, 180), source);
  await waitFor(/SIP\/2.0 180 Ringing/);
  t.pass('response on the same connection although sent-by names port 1');
  await b.transport.sendResponse(createResponse(msg as SipRequest, 183));
  await waitFor(/SIP\/2.0 183 Session Progress/);
  t.pass('a response sent without its source also finds the connection (by the Via it came with)');
  // a request to the peer's address reuses the same connection
  const bye = parseMessage(request('BYE', `SIP/2.0/TCP ${b.transport.sentBy};branch=z9hG4bKt2`)) as SipRequest;
  await b.transport.sendRequest(bye, { transport: 'TCP', address: '127.0.0.1', port: sock.localPort! });
  await waitFor(/^BYE sip:/m);
  t.equal(b.transport.tcpConnectionCount, 1, 'no second connection');
});

t.test(
  'TCP between two transports: one connection each way of use, framing across chunks and keep-alives',
  async (t) => {
    const a = await endpoint();
    const b = await endpoint();
    t.teardown(async () => {
      await a.transport.close();
      await b.transport.close();
    });
    const target = { transport: 'TCP' as const, address: '127.0.0.1', port: b.transport.port };
    for (let i = 0; i < 3; i++) {
      const req = parseMessage(
        request(
          'MESSAGE',
          `SIP/2.0/TCP ${a.transport.sentBy};branch=z9hG4bKm${i}`,
          ['Content-Type: text/plain'],
          `hello ${i}`,
        ),
      ) as SipRequest;
      await a.transport.sendRequest(req, target);
      const got = await b.next();
      t.equal(got.msg.body.toString(), `hello ${i}`);
      await b.transport.sendResponse(createResponse(got.msg as SipRequest, 200), got.source);
      const res = await a.next();
      t.ok(res.msg.kind === 'response' && res.msg.status === 200);
    }
    t.equal(a.transport.tcpConnectionCount, 1, 'A opened one connection');
    t.equal(b.transport.tcpConnectionCount, 1, 'B holds one connection');

    // framing: two messages split at odd places, with a keep-alive ping between them
    const sock = net.connect(b.transport.port, '127.0.0.1');
    await once(sock, 'connect');
    t.teardown(() => sock.destroy());
    const pong = once(sock, 'data');
    const wire = Buffer.from(
      request('OPTIONS', 'SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKf1') +
        '\r\n\r\n' +
        request('INFO', 'SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKf2', ['Content-Type: text/plain'], 'body-bytes'),
    );
    for (let i = 0; i < wire.length; i += 37) {
      sock.write(wire.subarray(i, Math.min(wire.length, i + 37)));
      await new Promise((r) => setImmediate(r));
    }
    const m1 = await b.next();
    const m2 = await b.next();
    t.ok(m1.msg.kind === 'request' && m1.msg.method === 'OPTIONS');
    t.ok(m2.msg.kind === 'request' && m2.msg.method === 'INFO' && m2.msg.body.toString() === 'body-bytes');
    const [p] = (await pong) as [Buffer];
    t.equal(p.toString(), '\r\n', 'CRLFCRLF ping answered with a CRLF pong (RFC 5626 3.5.1)');
  },
);

t.test('keep-alive ping resolves on the pong', async (t) => {
  const a = await endpoint();
  const b = await endpoint();
  t.teardown(async () => {
    await a.transport.close();
    await b.transport.close();
  });
  await a.transport.ping('127.0.0.1', b.transport.port, 2000);
  t.equal(a.transport.tcpConnectionCount, 1);
  // a silent TCP peer never pongs: the ping fails with TransportError
  const silent = net.createServer((s) => s.on('data', () => undefined));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    silent.close();
  });
  await t.rejects(a.transport.ping('127.0.0.1', (silent.address() as net.AddressInfo).port, 200), TransportError);
});

t.test('a request over 1300 bytes switches from UDP to TCP (RFC 3261 18.1.1)', async (t) => {
  const a = await endpoint();
  const b = await endpoint();
  t.teardown(async () => {
    await a.transport.close();
    await b.transport.close();
  });
  const target = { transport: 'UDP' as const, address: '127.0.0.1', port: b.transport.port };
  const small = parseMessage(
    request(
      'MESSAGE',
      `SIP/2.0/UDP ${a.transport.sentBy};branch=z9hG4bKs1`,
      ['Content-Type: text/plain'],
      'x'.repeat(100),
    ),
  ) as SipRequest;
  const p1 = a.transport.prepareRequest(small, target);
  t.equal(p1.target.transport, 'UDP');
  t.equal(p1.reliable, false);
  await a.transport.sendBytes(p1.bytes, p1.target);
  const r1 = await b.next();
  t.equal(r1.source.transport, 'UDP');
  const big = parseMessage(
    request(
      'MESSAGE',
      `SIP/2.0/UDP ${a.transport.sentBy};branch=z9hG4bKs2`,
      ['Content-Type: text/plain'],
      'y'.repeat(1400),
    ),
  ) as SipRequest;
  const p2 = await a.transport.sendRequest(big, target);
  t.equal(p2.target.transport, 'TCP');
  t.equal(p2.reliable, true);
  const r2 = await b.next();
  t.equal(r2.source.transport, 'TCP', 'arrived over TCP');
  t.equal(topVia(r2.msg).transport, 'TCP', 'top Via rewritten to TCP');
  t.equal(r2.msg.body.length, 1400);
});

t.test(
  'malformed datagrams reach the invalid handler with what was readable; TCP failures are TransportError',
  async (t) => {
    const b = await endpoint();
    t.teardown(() => b.transport.close());
    const client = await udpSocket();
    t.teardown(() => client.close());
    const raw = request('INVITE', 'SIP/2.0/UDP 127.0.0.1:7;branch=z9hG4bKbad;rport').replace(
      'Content-Length: 0',
      'Content-Length: 500',
    );
    client.send(raw, b.transport.port, '127.0.0.1');
    const { err, source } = await b.nextInvalid();
    t.equal(err.status, 400);
    t.equal(source.port, client.address().port);
    t.ok(
      err.partial && topVia(err.partial).params.get('rport') === String(client.address().port),
      'partial stamped with rport',
    );
    client.send('\r\n\r\n', b.transport.port, '127.0.0.1');
    client.send('garbage', b.transport.port, '127.0.0.1');
    const g = await b.nextInvalid();
    t.equal(g.err.partial, undefined, 'nothing readable in garbage; the CRLF keep-alive datagram was ignored');
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await t.rejects(
      b.transport.sendBytes(serializeMessage(parseMessage(request('OPTIONS', 'SIP/2.0/TCP x;branch=z9hG4bKe'))), {
        transport: 'TCP',
        address: '127.0.0.1',
        port,
      }),
      TransportError,
    );
  },
);

t.test('IPv6: UDP with rport and TCP on [::1]', async (t) => {
  const inbox: Received[] = [];
  let wake = () => undefined as void;
  const b = await SipTransport.listen(
    {
      message: (msg, source) => {
        inbox.push({ msg, source });
        wake();
      },
    },
    { host: '::1', port: 0 },
  );
  t.teardown(() => b.close());
  t.equal(b.sentBy, `[::1]:${b.port}`);
  const next = async () => {
    while (inbox.length === 0)
      await new Promise<void>((r) => {
        wake = r;
      });
    return inbox.shift()!;
  };
  const client = dgram.createSocket('udp6');
  await new Promise<void>((r) => client.bind(0, '::1', () => r()));
  t.teardown(() => client.close());
  client.send(request('OPTIONS', 'SIP/2.0/UDP [2001:db8::99]:5099;branch=z9hG4bK6;rport'), b.port, '::1');
  const { msg, source } = await next();
  t.equal(source.address, '::1');
  t.equal(topVia(msg).params.get('received'), '::1', 'received without brackets (RFC 3261 20.42)');
  const got = once(client, 'message');
  await b.sendResponse(createResponse(msg as SipRequest, 200));
  const [data] = (await got) as [Buffer];
  t.ok(parseMessage(data).kind === 'response', 'response routed to [::1] at the rport');
  const a = await SipTransport.listen({ message: () => undefined }, { host: '::1', port: 0 });
  t.teardown(() => a.close());
  const req = parseMessage(request('MESSAGE', `SIP/2.0/TCP ${a.sentBy};branch=z9hG4bK7`)) as SipRequest;
  await a.sendRequest(req, { transport: 'TCP', address: '::1', port: b.port });
  const over = await next();
  t.equal(over.source.transport, 'TCP');
  t.equal(over.source.address, '::1');
});

t.test('periodic keep-alive closes a connection whose peer stops answering (RFC 5626 4.4.1)', async (t) => {
  const closed: Array<{ key: string; err?: Error }> = [];
  let wake = () => undefined as void;
  const a = await SipTransport.listen(
    {
      message: () => undefined,
      connectionClosed: (key, err) => {
        closed.push({ key, err });
        wake();
      },
    },
    { host: '127.0.0.1', port: 0, keepAliveIntervalMs: 50, keepAliveTimeoutMs: 100 },
  );
  t.teardown(() => a.close());
  // a peer that accepts the connection and never answers a ping
  const silent = net.createServer((s) => s.on('data', () => undefined));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    silent.close();
  });
  const port = (silent.address() as net.AddressInfo).port;
  // and a peer that does: another transport
  const b = await SipTransport.listen({ message: () => undefined });
  t.teardown(() => b.close());
  const opts = { transport: 'TCP' as const, address: '127.0.0.1' };
  await a.sendBytes(Buffer.from('\r\n\r\n'), { ...opts, port });
  await a.sendBytes(Buffer.from('\r\n\r\n'), { ...opts, port: b.port });
  while (closed.length === 0)
    await new Promise<void>((r) => {
      wake = r;
    });
  t.equal(closed[0].key, `127.0.0.1:${port}`, 'the silent flow failed');
  t.ok(closed[0].err instanceof TransportError, 'with a TransportError');
  t.ok(a.hasConnection('127.0.0.1', b.port), 'the answering flow stays up');
  t.notOk(a.hasConnection('127.0.0.1', port));
});

t.test(
  'TCP framing: a bad message is reported and skipped; a message without Content-Length closes the connection',
  async (t) => {
    const b = await endpoint();
    t.teardown(() => b.transport.close());
    const sock = net.connect(b.transport.port, '127.0.0.1');
    await once(sock, 'connect');
    const closed = once(sock, 'close');
    // framing is fine but the Request-Line is not: reported, and the next message still arrives
    sock.write('INVITE  sip:a@b  SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKx1\r\nContent-Length: 0\r\n\r\n');
    sock.write(request('OPTIONS', 'SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKx2'));
    const bad = await b.nextInvalid();
    t.equal(bad.err.status, 400);
    t.equal(bad.source.transport, 'TCP');
    const ok = await b.next();
    t.ok(ok.msg.kind === 'request' && ok.msg.method === 'OPTIONS', 'the stream went on');
    // RFC 3261 18.3: without Content-Length a stream cannot be framed: the connection is closed
    sock.write('OPTIONS sip:a@b SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKx3\r\n\r\n');
    const fatal = await b.nextInvalid();
    t.match(fatal.err.message, /Content-Length/);
    await closed;
    t.pass('server closed the connection');
  },
);

t.test(
  'TCP framing: a Content-Length over the largest datagram closes the connection before the body is held',
  async (t) => {
    const b = await endpoint();
    t.teardown(() => b.transport.close());
    const peer = await tcpClient(t, b.transport.port);
    let reset: Error | undefined;
    peer.sock.on('error', (err) => {
      reset = err;
    });
    const head = request('OPTIONS', 'SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKbig').replace(
      'Content-Length: 0',
      'Content-Length: 16000000',
    );
    peer.sock.write(head);
    peer.sock.write(Buffer.alloc(100_000, 0x78));
    const fatal = await b.nextInvalid();
    t.match(fatal.err.message, /Content-Length "16000000"/);
    await until(() => peer.state.closed, 'the connection closed');
    t.ok(
      reset === undefined || (reset as NodeJS.ErrnoException).code === 'ECONNRESET',
      'closed or reset by the server',
    );
    await until(() => b.transport.tcpConnectionCount === 0, 'the connection forgotten');
    t.equal(b.inbox.length, 0, 'no message delivered');
  },
);

t.test(
  'TCP: connections from one address past MAX_TCP_CONNECTIONS_PER_ADDRESS are closed as they arrive',
  async (t) => {
    const b = await endpoint();
    t.teardown(() => b.transport.close());
    const clients = [];
    for (let i = 0; i < MAX_TCP_CONNECTIONS_PER_ADDRESS; i++) clients.push(await tcpClient(t, b.transport.port));
    await until(
      () => b.transport.tcpConnectionCount === MAX_TCP_CONNECTIONS_PER_ADDRESS,
      'every allowed connection adopted',
    );
    const extra = await tcpClient(t, b.transport.port);
    extra.sock.on('error', () => {
      extra.state.closed = true;
    });
    await until(() => extra.state.closed, 'the connection over the limit closed');
    t.equal(b.transport.tcpConnectionCount, MAX_TCP_CONNECTIONS_PER_ADDRESS, 'the others kept');
    t.notOk(
      clients.some((c) => c.state.closed),
      'none of the others closed',
    );
    // one closed frees a place: a new connection is taken and carries a request
    clients[0]!.sock.destroy();
    await until(
      () => b.transport.tcpConnectionCount === MAX_TCP_CONNECTIONS_PER_ADDRESS - 1,
      'the closed one forgotten',
    );
    const next = await tcpClient(t, b.transport.port);
    next.sock.write(request('OPTIONS', 'SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKcap'));
    const got = await b.next();
    t.equal(got.source.transport, 'TCP', 'the new connection is served');
  },
);

/** A TCP client of `port` whose 'close' is recorded. */
async function tcpClient(t: Test, port: number) {
  const sock = net.connect(port, '127.0.0.1');
  await once(sock, 'connect');
  t.teardown(() => sock.destroy());
  const state = { closed: false, data: '' };
  sock.on('data', (d) => {
    state.data += d.toString('latin1');
  });
  sock.on('close', () => {
    state.closed = true;
  });
  return { sock, state };
}

/** Resolves after `ms` of real time (for checks that something did NOT happen meanwhile). */
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await pause(5);
  }
}

const IDLE_MS = 40;

t.test('TCP idle timeout: a silent connection is closed, a held one stays open until released', async (t) => {
  const inbox: Array<{ msg: SipMessage; source: Source }> = [];
  const transport = await SipTransport.listen(
    { message: (msg, source) => inbox.push({ msg, source }) },
    { idleTimeoutMs: IDLE_MS },
  );
  t.teardown(() => transport.close());
  const silent = await tcpClient(t, transport.port);
  const held = await tcpClient(t, transport.port);
  held.sock.write(request('OPTIONS', 'SIP/2.0/TCP 127.0.0.1:1;branch=z9hG4bKidle1'));
  await until(() => inbox.length === 1, 'the OPTIONS');
  const release = transport.holdConnection(inbox[0]!.source);
  await until(() => silent.state.closed, 'the silent connection closed');
  await pause(6 * IDLE_MS);
  t.notOk(held.state.closed, 'the held connection is open six idle periods on');
  t.equal(transport.tcpConnectionCount, 1);
  release();
  await until(() => held.state.closed, 'the released connection closed');
  t.equal(transport.tcpConnectionCount, 0);
});

t.test(
  'TCP idle timeout: a peer trickling bytes of a message it never finishes is closed like a silent one',
  async (t) => {
    const inbox: Array<{ msg: SipMessage; source: Source }> = [];
    const transport = await SipTransport.listen(
      { message: (msg, source) => inbox.push({ msg, source }) },
      { idleTimeoutMs: IDLE_MS },
    );
    t.teardown(() => transport.close());
    const slow = await tcpClient(t, transport.port);
    let reset: Error | undefined;
    slow.sock.on('error', (err) => {
      reset = err;
    });
    slow.sock.write('OPTIONS sip:bob@127.0.0.1 SIP/2.0\r\nX-Slow: ');
    const trickle = setInterval(() => {
      if (!slow.state.closed) slow.sock.write('x');
    }, IDLE_MS / 4);
    t.teardown(() => clearInterval(trickle));
    await until(() => slow.state.closed, 'the trickling connection closed');
    t.ok(
      reset === undefined || ['ECONNRESET', 'EPIPE'].includes((reset as NodeJS.ErrnoException).code ?? ''),
      'closed or reset by the server',
    );
    t.equal(inbox.length, 0);
    await until(() => transport.tcpConnectionCount === 0, 'the connection forgotten');
  },
);

t.test('TCP idle timeout: never while a server or client transaction still needs the connection', async (t) => {
  let serverTx: ServerTransaction | undefined;
  const transport = await SipTransport.listen(
    {
      message: (msg, source) => layer.receive(msg, source),
    },
    { idleTimeoutMs: IDLE_MS },
  );
  t.teardown(() => transport.close());
  const layer: TransactionLayer = new TransactionLayer(transport, {
    request: (_req, tx) => {
      serverTx = tx;
    },
  });

  // A request over TCP not answered yet: its server transaction holds the connection.
  const peer = await tcpClient(t, transport.port);
  const options = request('OPTIONS', 'SIP/2.0/TCP 127.0.0.1:1;branch=z9hG4bKidle2');
  peer.sock.write(options);
  await until(() => serverTx !== undefined, 'the server transaction');
  await pause(6 * IDLE_MS);
  t.notOk(peer.state.closed, 'open while the request is unanswered');
  serverTx!.respond(createResponse(serverTx!.request, 200));
  await until(() => peer.state.data.includes('SIP/2.0 200 OK'), 'the 200 on the connection');
  await until(() => peer.state.closed, 'closed once the transaction ended and the connection idled');

  // A request we send over TCP: the client transaction holds the connection until its response.
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => server.close());
  const accepted = once(server, 'connection') as Promise<[net.Socket]>;
  let final = 0;
  const req = parseMessage(request('OPTIONS', `SIP/2.0/TCP ${transport.sentBy};branch=z9hG4bKidle3`)) as SipRequest;
  layer.sendRequest(
    req,
    { transport: 'TCP', address: '127.0.0.1', port: (server.address() as net.AddressInfo).port },
    {
      response: (res) => {
        final = res.status;
      },
    },
  );
  const [conn] = await accepted;
  let closed = false;
  let received = '';
  conn.on('data', (d) => {
    received += d.toString('latin1');
  });
  conn.on('close', () => {
    closed = true;
  });
  await until(() => received.includes('\r\n\r\n'), 'the OPTIONS at the peer');
  await pause(6 * IDLE_MS);
  t.notOk(closed, 'open while the request awaits its response');
  conn.write(serializeMessage(createResponse(parseMessage(received) as SipRequest, 200)));
  await until(() => final === 200, 'the 200 at the client transaction');
  await until(() => closed, 'closed once the transaction ended and the connection idled');
});
