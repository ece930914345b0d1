// One SIP transport endpoint: UDP and TCP on the same address and port (RFC 3261 18). Parses what arrives,
// stamps received/rport on requests (18.2.1, RFC 3581), hands messages up through callbacks, sends requests
// (switching to TCP above the size limit, 18.1.1) and responses (routed by Via, 18.2.2).
import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { SipParseError, TransportError } from '../errors.js';
import { parseVia, serializeVia } from '../message/address.js';
import { parseMessage } from '../message/parser.js';
import { serializeMessage } from '../message/serializer.js';
import type { SipMessage, SipRequest, SipResponse } from '../message/types.js';
import { TcpSide } from './tcp.js';
import {
  KEEPALIVE_PONG_TIMEOUT_MS,
  MAX_DATAGRAM,
  MAX_TCP_CONNECTIONS_PER_ADDRESS,
  TCP_IDLE_TIMEOUT_MS,
  UDP_SIZE_LIMIT,
  type Source,
  type Target,
  type TransportHandlers,
  type TransportName,
  type TransportOptions,
} from './types.js';
import { bareAddress, responseDestination, stampReceived } from './via.js';

/** How many times to retry binding UDP on the port TCP got, when port 0 was asked for. */
const BIND_ATTEMPTS = 8;

/** A request ready to send: its bytes and the target after the size rule (RFC 3261 18.1.1). */
export interface PreparedRequest {
  bytes: Buffer;
  target: Target;
  reliable: boolean;
}

export class SipTransport {
  private constructor(
    private readonly udp: dgram.Socket,
    private readonly tcp: TcpSide,
    readonly host: string,
    readonly port: number,
    readonly advertisedHost: string,
    private readonly opts: Required<Pick<TransportOptions, 'udpSizeLimit' | 'keepAliveTimeoutMs'>>,
  ) {}

  /** Bind UDP and TCP on one address and port. Rejects with TransportError. */
  static async listen(handlers: TransportHandlers, options: TransportOptions = {}): Promise<SipTransport> {
    const host = options.host ?? '127.0.0.1';
    const family = net.isIPv6(host) ? 'udp6' : 'udp4';
    for (let attempt = 0; attempt < BIND_ATTEMPTS; attempt++) {
      const server = net.createServer();
      await listenTcp(server, host, options.port ?? 0);
      const port = (server.address() as net.AddressInfo).port;
      const udp = dgram.createSocket({ type: family });
      try {
        await bindUdp(udp, host, port);
      } catch (err) {
        udp.close();
        await new Promise<void>((r) => server.close(() => r()));
        if ((options.port ?? 0) === 0 && (err as NodeJS.ErrnoException).code === 'EADDRINUSE') continue;
        throw new TransportError(`UDP bind ${host}:${port} failed: ${(err as Error).message}`, err);
      }
      const deliver = (msg: SipMessage, source: Source) => {
        if (msg.kind === 'request') stampReceived(msg, source);
        handlers.message(msg, source);
      };
      const invalid = (err: SipParseError, source: Source) => {
        if (err.partial?.kind === 'request') stampReceived(err.partial, source);
        handlers.invalid?.(err, source);
      };
      const tcp = new TcpSide(
        server,
        {
          keepAliveIntervalMs: options.keepAliveIntervalMs ?? 0,
          keepAliveTimeoutMs: options.keepAliveTimeoutMs ?? KEEPALIVE_PONG_TIMEOUT_MS,
          idleTimeoutMs: options.idleTimeoutMs ?? TCP_IDLE_TIMEOUT_MS,
          maxConnectionsPerAddress: options.maxConnectionsPerAddress ?? MAX_TCP_CONNECTIONS_PER_ADDRESS,
          localAddress: host,
        },
        {
          message: (msg, source) => {
            if (msg.kind === 'request' && source.connection !== undefined) {
              stampReceived(msg, source);
              aliasFromVia(tcp, msg, source);
            }
            handlers.message(msg, source);
          },
          invalid,
          closed: (key, err) => handlers.connectionClosed?.(key, err),
        },
      );
      udp.on('message', (data, rinfo) => {
        // RFC 5626 4.4.2 / common practice: a bare CRLF (or CRLFCRLF) datagram is a keep-alive, not a message.
        if (data.length <= 4 && data.every((b) => b === 0x0d || b === 0x0a)) return;
        const source: Source = { transport: 'UDP', address: bareAddress(rinfo.address), port: rinfo.port };
        let msg: SipMessage;
        try {
          msg = parseMessage(data);
        } catch (err) {
          if (!(err instanceof SipParseError)) throw err;
          invalid(err, source);
          return;
        }
        deliver(msg, source);
      });
      udp.on('error', (err) => handlers.connectionClosed?.('udp', err));
      return new SipTransport(udp, tcp, host, port, options.advertisedHost ?? host, {
        udpSizeLimit: options.udpSizeLimit ?? UDP_SIZE_LIMIT,
        keepAliveTimeoutMs: options.keepAliveTimeoutMs ?? KEEPALIVE_PONG_TIMEOUT_MS,
      });
    }
    throw new TransportError(`could not bind UDP and TCP on one port on ${host}`);
  }

  /** The Via sent-by this transport advertises (`host:port`, IPv6 in brackets). */
  get sentBy(): string {
    const h = net.isIPv6(this.advertisedHost) ? `[${this.advertisedHost}]` : this.advertisedHost;
    return `${h}:${this.port}`;
  }

  get tcpConnectionCount(): number {
    return this.tcp.connectionCount;
  }

  hasConnection(address: string, port: number): boolean {
    return this.tcp.hasConnection(address, port);
  }

  /**
   * Serialize a request for a target, applying RFC 3261 18.1.1: over UDP, a request larger than the size
   * limit goes over TCP instead, and its top Via says so. The caller keeps the bytes for retransmission.
   */
  prepareRequest(req: SipRequest, target: Target): PreparedRequest {
    let bytes = serializeMessage(req);
    let transport: TransportName = target.transport;
    if (transport === 'UDP' && bytes.length > this.opts.udpSizeLimit) {
      transport = 'TCP';
      const top = req.headers.first('Via');
      if (top !== undefined) {
        const via = parseVia(top);
        via.transport = 'TCP';
        req.headers.replaceFirst('Via', serializeVia(via));
      }
      bytes = serializeMessage(req);
    }
    return { bytes, target: { ...target, transport }, reliable: transport === 'TCP' };
  }

  /** Send bytes to a target. Rejects with TransportError. */
  async sendBytes(bytes: Buffer, target: Target): Promise<void> {
    if (target.transport === 'TCP') return this.tcp.send(target.address, target.port, bytes);
    await new Promise<void>((resolve, reject) => {
      this.udp.send(bytes, target.port, bareAddress(target.address), (err) =>
        err
          ? reject(new TransportError(`UDP send to ${target.address}:${target.port} failed: ${err.message}`, err))
          : resolve(),
      );
    });
  }

  /** Prepare and send a request; resolves to what was sent. Rejects with TransportError. */
  async sendRequest(req: SipRequest, target: Target): Promise<PreparedRequest> {
    const prepared = this.prepareRequest(req, target);
    await this.sendBytes(prepared.bytes, prepared.target);
    return prepared;
  }

  /**
   * Send a response (RFC 3261 18.2.2): on the TCP connection its request came in on while it is open,
   * else to the address the top Via names (received, rport: RFC 3581 4). Rejects with TransportError.
   */
  async sendResponse(res: SipResponse, source?: Source): Promise<void> {
    await this.sendResponseBytes(serializeMessage(res), res, source);
  }

  /** As sendResponse with bytes already serialized (retransmissions). */
  async sendResponseBytes(bytes: Buffer, res: SipResponse, source?: Source): Promise<void> {
    if (source?.transport === 'TCP' && source.connection !== undefined) {
      if (await this.tcp.sendOn(source.connection, bytes)) return;
    }
    const top = res.headers.first('Via');
    if (top === undefined) throw new TransportError('response without Via');
    let dest;
    try {
      dest = responseDestination(parseVia(top));
    } catch (err) {
      throw new TransportError('response with a malformed top Via', err);
    }
    const address = net.isIP(dest.host) ? dest.host : await resolveHost(dest.host);
    await this.sendBytes(bytes, { transport: dest.transport, address, port: dest.port });
  }

  /**
   * Keeps the TCP connection to or from `at` (a Source or a Target) open, however idle, until the returned
   * release is called: for a transaction (RFC 3261 18.1.1, 18.2.2: it completes over the connection it began
   * on) or a dialog (RFC 5626 3: requests reach the peer over the flow it opened). No-op for UDP.
   */
  holdConnection(at: Source | Target): () => void {
    return at.transport === 'TCP' ? this.tcp.hold(at.address, at.port) : () => undefined;
  }

  /** RFC 5626 3.5.1 keep-alive: CRLFCRLF on the TCP connection to address:port, resolved by the CRLF pong. */
  ping(address: string, port: number, timeoutMs = this.opts.keepAliveTimeoutMs): Promise<void> {
    return this.tcp.ping(address, port, timeoutMs);
  }

  async close(): Promise<void> {
    await this.tcp.close();
    await new Promise<void>((resolve) => this.udp.close(() => resolve()));
  }
}

/**
 * Make a TCP connection reachable by where its request's Via says responses go (RFC 3261 18.2.2: the
 * response goes back on the connection the request came in on; after stamping, that is the source address
 * at the sent-by port), so a response sent without its Source still finds the open connection.
 */
function aliasFromVia(tcp: TcpSide, req: SipRequest, source: Source): void {
  const top = req.headers.first('Via');
  if (top === undefined) return;
  try {
    const dest = responseDestination(parseVia(top));
    if (dest.transport === 'TCP' && dest.host === source.address) tcp.alias(source.connection!, dest.host, dest.port);
  } catch (err) {
    if (!(err instanceof SipParseError)) throw err;
  }
}

/** A host name to an address (A/AAAA through the system resolver; RFC 3263 SRV/NAPTR is not done here). */
export async function resolveHost(host: string): Promise<string> {
  try {
    return (await lookup(host)).address;
  } catch (err) {
    throw new TransportError(`cannot resolve ${host}`, err);
  }
}

function listenTcp(server: net.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) =>
      reject(new TransportError(`TCP listen ${host}:${port} failed: ${err.message}`, err));
    server.once('error', onError);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

function bindUdp(udp: dgram.Socket, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    udp.once('error', reject);
    udp.bind({ address: host, port, exclusive: true }, () => {
      udp.off('error', reject);
      resolve();
    });
  });
}

export { MAX_DATAGRAM };
