// TCP side of the transport (RFC 3261 18.3): one listening socket, connections keyed by remote address and
// reused for requests and responses both ways, a stream framer per connection, RFC 5626 3.5.1 CRLF keep-alive
// (we answer a CRLFCRLF ping with a CRLF pong, and ping the connections we opened), and the closing of idle
// connections: one that carried no whole message for idleTimeoutMs and that no transaction or dialog holds.
// Accepted connections are bounded per remote address (maxConnectionsPerAddress).
import net from 'node:net';
import { type SipParseError, TransportError } from '../errors.js';
import { StreamFramer } from '../message/framer.js';
import type { SipMessage } from '../message/types.js';
import { bareAddress } from './via.js';
import type { Source } from './types.js';

const PING = Buffer.from('\r\n\r\n');
const PONG = Buffer.from('\r\n');

export interface TcpEvents {
  message(msg: SipMessage, source: Source): void;
  invalid(err: SipParseError, source: Source): void;
  closed(key: string, err?: Error): void;
}

export interface TcpOptions {
  keepAliveIntervalMs: number;
  keepAliveTimeoutMs: number;
  /** Close a connection unheld and silent this long; 0 = never. */
  idleTimeoutMs: number;
  /** Connections accepted from one remote address at a time; one more is closed as it arrives. */
  maxConnectionsPerAddress: number;
  localAddress: string;
}

/** Connection key: remote address and port (RFC 3261 18.3 / RFC 5923 connection reuse). */
export function connectionKey(address: string, port: number): string {
  return `${bareAddress(address)}:${port}`;
}

class Connection {
  readonly framer: StreamFramer;
  private pongWaiters: Array<() => void> = [];
  private keepAlive: NodeJS.Timeout | undefined;
  /** Date.now() of the last whole message in, the last bytes out, or the last hold released. */
  lastActivity = Date.now();
  idleTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly id: number,
    readonly key: string,
    readonly socket: net.Socket,
    readonly source: Source,
    events: TcpEvents,
  ) {
    this.framer = new StreamFramer({
      message: (msg) => {
        this.lastActivity = Date.now();
        events.message(msg, this.source);
      },
      invalid: (err) => {
        this.lastActivity = Date.now();
        events.invalid(err, this.source);
      },
      fatal: (err) => {
        events.invalid(err, this.source);
        socket.destroy(err);
      },
      // RFC 5626 3.5.1: answer a double-CRLF ping with a single CRLF pong.
      ping: () => {
        socket.write(PONG);
      },
      pong: () => {
        const waiters = this.pongWaiters;
        this.pongWaiters = [];
        for (const w of waiters) w();
      },
    });
  }

  /** Send a ping and wait for the pong (RFC 5626 3.5.1); rejects with TransportError on timeout. */
  ping(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pongWaiters = this.pongWaiters.filter((w) => w !== done);
        reject(new TransportError(`no keep-alive pong from ${this.key} within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.pongWaiters.push(done);
      this.socket.write(PING);
    });
  }

  startKeepAlive(intervalMs: number, timeoutMs: number): void {
    if (intervalMs <= 0) return;
    this.keepAlive = setInterval(() => {
      this.ping(timeoutMs).catch((err: Error) => this.socket.destroy(err));
    }, intervalMs);
    this.keepAlive.unref();
  }

  stopTimers(): void {
    if (this.keepAlive) clearInterval(this.keepAlive);
    if (this.idleTimer) clearTimeout(this.idleTimer);
  }
}

export class TcpSide {
  private readonly byKey = new Map<string, Connection>();
  private readonly byId = new Map<number, Connection>();
  private readonly connecting = new Map<string, Promise<Connection>>();
  /** Holds per connection key (remote address:port, or an alias): transactions and dialogs using it. */
  private readonly holds = new Map<string, number>();
  /** Accepted connections open per remote address (bounds what one peer can take of the process's sockets). */
  private readonly acceptedFrom = new Map<string, number>();
  private nextId = 1;

  constructor(
    readonly server: net.Server,
    private readonly opts: TcpOptions,
    private readonly events: TcpEvents,
  ) {
    server.on('connection', (socket) => this.accept(socket));
  }

  private accept(socket: net.Socket): void {
    const address = bareAddress(socket.remoteAddress ?? '');
    const open = this.acceptedFrom.get(address) ?? 0;
    if (open >= this.opts.maxConnectionsPerAddress) {
      socket.destroy();
      return;
    }
    this.acceptedFrom.set(address, open + 1);
    socket.on('close', () => {
      const left = (this.acceptedFrom.get(address) ?? 1) - 1;
      if (left > 0) this.acceptedFrom.set(address, left);
      else this.acceptedFrom.delete(address);
    });
    this.adopt(socket, false);
  }

  get connectionCount(): number {
    return this.byId.size;
  }

  hasConnection(address: string, port: number): boolean {
    return this.byKey.has(connectionKey(address, port));
  }

  /** Register an accepted or opened socket under its remote address. */
  private adopt(socket: net.Socket, outbound: boolean): Connection {
    const address = bareAddress(socket.remoteAddress ?? '');
    const port = socket.remotePort ?? 0;
    const key = connectionKey(address, port);
    const id = this.nextId++;
    const conn = new Connection(id, key, socket, { transport: 'TCP', address, port, connection: id }, this.events);
    this.byKey.set(key, conn);
    this.byId.set(id, conn);
    socket.setNoDelay(true);
    this.armIdle(conn, this.opts.idleTimeoutMs);
    // Only whole messages count as activity (the framer's callbacks): a peer trickling bytes of a message it
    // never finishes is closed when idle like a silent one.
    socket.on('data', (chunk: Buffer) => conn.framer.push(chunk));
    let failure: Error | undefined;
    socket.on('error', (err) => {
      failure = err;
    });
    socket.on('close', () => {
      conn.stopTimers();
      if (this.byKey.get(key) === conn) this.byKey.delete(key);
      for (const [alias, c] of this.byKey) if (c === conn) this.byKey.delete(alias);
      this.byId.delete(id);
      this.events.closed(key, failure);
    });
    if (outbound) conn.startKeepAlive(this.opts.keepAliveIntervalMs, this.opts.keepAliveTimeoutMs);
    return conn;
  }

  /**
   * Keeps the connection to address:port (opened now or later, reached directly or by an alias) open until the
   * returned release is called (once; later calls do nothing). The idle time counts again from the release.
   */
  hold(address: string, port: number): () => void {
    const key = connectionKey(address, port);
    this.holds.set(key, (this.holds.get(key) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (this.holds.get(key) ?? 1) - 1;
      if (left > 0) this.holds.set(key, left);
      else this.holds.delete(key);
      const conn = this.byKey.get(key);
      if (conn) conn.lastActivity = Date.now();
    };
  }

  private isHeld(conn: Connection): boolean {
    if (this.holds.has(conn.key)) return true;
    for (const [key, c] of this.byKey) if (c === conn && this.holds.has(key)) return true;
    return false;
  }

  /** Checks the connection again in `ms`: closed when unheld and silent for idleTimeoutMs, else checked later. */
  private armIdle(conn: Connection, ms: number): void {
    if (this.opts.idleTimeoutMs <= 0) return;
    conn.idleTimer = setTimeout(() => {
      if (conn.socket.destroyed) return;
      const silentFor = Date.now() - conn.lastActivity;
      if (this.isHeld(conn)) this.armIdle(conn, this.opts.idleTimeoutMs);
      else if (silentFor < this.opts.idleTimeoutMs) this.armIdle(conn, this.opts.idleTimeoutMs - silentFor);
      else conn.socket.destroy();
    }, ms);
    conn.idleTimer.unref();
  }

  /** Also reach a connection by the address and port its peer's Via names (responses, RFC 3261 18.2.2). */
  alias(connectionId: number, address: string, port: number): void {
    const conn = this.byId.get(connectionId);
    if (!conn || conn.socket.destroyed) return;
    const key = connectionKey(address, port);
    const existing = this.byKey.get(key);
    // an alias never displaces a live connection that is really at that address
    if (existing === undefined || existing.socket.destroyed || existing.key !== key) this.byKey.set(key, conn);
  }

  /** The open connection to address:port, or a new one. */
  async connect(address: string, port: number): Promise<Connection> {
    const key = connectionKey(address, port);
    const open = this.byKey.get(key);
    if (open) return open;
    const pending = this.connecting.get(key);
    if (pending) return pending;
    const attempt = new Promise<Connection>((resolve, reject) => {
      const socket = net.connect({ host: bareAddress(address), port, localAddress: this.opts.localAddress });
      const onError = (err: Error) => reject(new TransportError(`TCP connect to ${key} failed: ${err.message}`, err));
      socket.once('error', onError);
      socket.once('connect', () => {
        socket.off('error', onError);
        resolve(this.adopt(socket, true));
      });
    });
    this.connecting.set(key, attempt);
    try {
      return await attempt;
    } finally {
      this.connecting.delete(key);
    }
  }

  /** Write on a connection; rejects with TransportError. */
  write(conn: Connection, bytes: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      if (conn.socket.destroyed) {
        reject(new TransportError(`connection ${conn.key} is closed`));
        return;
      }
      conn.lastActivity = Date.now();
      conn.socket.write(bytes, (err) =>
        err ? reject(new TransportError(`TCP send to ${conn.key} failed: ${err.message}`, err)) : resolve(),
      );
    });
  }

  /** Send to address:port, reusing an open connection or opening one. */
  async send(address: string, port: number, bytes: Buffer): Promise<void> {
    await this.write(await this.connect(address, port), bytes);
  }

  /** Send on the connection a request arrived on, if it is still open; false if it is not. */
  async sendOn(connectionId: number, bytes: Buffer): Promise<boolean> {
    const conn = this.byId.get(connectionId);
    if (!conn || conn.socket.destroyed) return false;
    await this.write(conn, bytes);
    return true;
  }

  /** RFC 5626 3.5.1 ping on the connection to address:port (opened if needed); resolves on the pong. */
  async ping(address: string, port: number, timeoutMs: number): Promise<void> {
    const conn = await this.connect(address, port);
    await conn.ping(timeoutMs);
  }

  close(): Promise<void> {
    for (const conn of this.byId.values()) conn.socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
