// The realtime port of one media worker (docs/sts-protocol.md): a uWebSockets.js app serving /v1/sts/ws and
// /v1/conversations/:id/live/ws. Upgrades are authenticated through main before the socket opens; sockets whose
// conversation lives on another worker are relayed through main (worker-protocol.ts).
import type { BlockList } from 'node:net';
import type { Auth } from '../auth/authenticate.js';
import { bearerSecret } from '../auth/authenticate.js';
import { clientAddress } from '../auth/addresses.js';
import { CONVERSATION_ORIGINS } from '../schemas/conversations.js';
import type { ConversationOrigin } from '../conversation/host.js';
import type { Logger } from '../log.js';
import { MainRequestError, type MainClient } from '../workers/main-client.js';
import {
  type LiveHost,
  newAttachment,
  CLOSE_NOT_LIVE,
  CLOSE_RESTARTING,
  RESTARTING,
  type Attachment,
} from './live-host.js';
import { BACKPRESSURE, RelaySink, SocketSink, type SocketState } from './sink.js';
import {
  App,
  closeListenSocket,
  DISABLED,
  listenSocketPort,
  text,
  upgradeAfterAwait,
  type HttpRequest,
  type HttpResponse,
  type TemplatedApp,
  type us_listen_socket,
  type us_socket_context_t,
  type WebSocket,
} from './uws.js';
import type { RelayKind, SocketInspection, WorkerNotice } from '../workers/worker-protocol.js';

/** RFC 6455 7.4.1: 1011, the server met an unexpected condition. */
const CLOSE_INTERNAL = 1011;

export const STS_PATH = '/v1/sts/ws';
export const OBSERVER_PATH = '/v1/conversations/:id/live/ws';

export const STS_SOCKET = {
  /** The largest client frame: a 40 ms chunk of pcm_48000 as base64 JSON is ~5 KB; config with tools more. */
  max_payload_bytes: 256 * 1024,
  /** Seconds without any frame before uWS closes the socket (pings keep healthy ones open). */
  idle_timeout_sec: 120,
} as const;

type SocketKind = 'sts' | 'observer';

/** Shutdown: how long sockets get to answer our close frame before they are closed by force. */
const SOCKET_CLOSE_GRACE_MS = 1_000;

/**
 * A socket's own state and, for a socket of this worker's conversation, its Attachment: one object, so a client
 * frame reads one object's fields before reaching the conversation.
 */
interface SocketData extends SocketState, Attachment {
  kind: SocketKind;
  auth: Auth;
  conversationId: string | null;
  origin: ConversationOrigin['origin'];
  sink: SocketSink | null;
  /** Set when the conversation lives on another worker and this socket is relayed. */
  relayId: number | null;
  /** What the owner of a relayed socket's conversation was last told: audio paused (relay_flow). */
  relayPaused: boolean;
}

export interface StsServerOptions {
  host: string;
  port: number;
  workerId: number;
  main: MainClient;
  post(notice: WorkerNotice): void;
  trustedProxies: BlockList;
  host_: LiveHost;
  log: Logger;
}

interface Refusal {
  status: string;
  message: string;
  code: string;
}

const UNAUTHORIZED: Refusal = {
  status: '401 Unauthorized',
  message: 'missing or invalid API key or session token',
  code: 'unauthorized',
};
const SCOPED_TOKEN: Refusal = {
  status: '403 Forbidden',
  message: 'a session token restricted to conversation_ids cannot open the STS WebSocket',
  code: 'forbidden',
};
/** Secrets in URLs end up in access logs and browser history: the query takes short-lived session tokens only. */
const API_KEY_IN_QUERY: Refusal = {
  status: '401 Unauthorized',
  message: '?session_token= takes session tokens only: send an API key in the Authorization header (Bearer)',
  code: 'unauthorized',
};
const SHUTTING_DOWN: Refusal = {
  status: '503 Service Unavailable',
  message: 'the node is shutting down',
  code: 'unavailable',
};
const NOT_IN_SCOPE: Refusal = {
  status: '403 Forbidden',
  message: 'the session token does not cover this conversation',
  code: 'forbidden',
};

export class StsServer {
  private app: TemplatedApp | null = null;
  private listenSocket: us_listen_socket | null = null;
  private readonly sockets = new Set<WebSocket<SocketData>>();
  /** Relayed sockets of this worker by relay id (this worker holds the socket, another the conversation). */
  private readonly relayed = new Map<number, WebSocket<SocketData>>();
  /** The other way round: sinks of sockets held by other workers, for conversations of this one. */
  private readonly relaySinks = new Map<number, RelaySink>();
  private nextRelay = 1;
  /** Upgrades waiting on authentication: closed at shutdown so no socket opens after it. */
  private readonly pendingUpgrades = new Set<HttpResponse>();
  private closing = false;
  /** The node drains: new STS conversations are refused (drain()). */
  private draining = false;
  port = 0;

  constructor(private readonly opts: StsServerOptions) {}

  private get host(): LiveHost {
    return this.opts.host_;
  }

  listen(): Promise<number> {
    const behavior = (kind: SocketKind) => ({
      compression: DISABLED,
      maxPayloadLength: STS_SOCKET.max_payload_bytes,
      maxBackpressure: BACKPRESSURE.max_backpressure_bytes,
      idleTimeout: STS_SOCKET.idle_timeout_sec,
      sendPingsAutomatically: true,
      upgrade: (res: HttpResponse, req: HttpRequest, context: us_socket_context_t) =>
        this.upgrade(kind, res, req, context),
      open: (ws: WebSocket<SocketData>) => this.opened(ws),
      message: (ws: WebSocket<SocketData>, message: ArrayBuffer, isBinary: boolean) =>
        this.received(ws, message, isBinary),
      drain: (ws: WebSocket<SocketData>) => {
        ws.getUserData().sink?.drained();
        this.reportRelayFlow(ws.getUserData());
      },
      close: (ws: WebSocket<SocketData>, code: number) => this.closedSocket(ws, code),
    });
    const app = App().ws<SocketData>(STS_PATH, behavior('sts')).ws<SocketData>(OBSERVER_PATH, behavior('observer'));
    app.any('/*', (res) => {
      res.writeStatus('404 Not Found').end('not found');
    });
    this.app = app;
    return new Promise((resolve, reject) => {
      app.listen(this.opts.host, this.opts.port, (socket) => {
        if (!socket) return reject(new Error(`cannot listen on ${this.opts.host}:${this.opts.port}`));
        this.listenSocket = socket;
        this.port = listenSocketPort(socket);
        resolve(this.port);
      });
    });
  }

  private upgrade(kind: SocketKind, res: HttpResponse, req: HttpRequest, context: us_socket_context_t): void {
    // The request dies with this callback: copy everything first, then register onAborted before any await.
    const key = req.getHeader('sec-websocket-key');
    const protocol = req.getHeader('sec-websocket-protocol');
    const extensions = req.getHeader('sec-websocket-extensions');
    const headerSecret = bearerSecret(req.getHeader('authorization') || undefined);
    const secret = headerSecret ?? req.getQuery('session_token') ?? null;
    const secretInQuery = headerSecret === null && secret !== null;
    const forwardedFor = req.getHeader('x-forwarded-for') || undefined;
    const reconnectId = req.getQuery('reconnect_conv_id') || null;
    const originParam = req.getQuery('origin');
    const observed = kind === 'observer' ? req.getParameter(0) : null;
    const peer = text(res.getRemoteAddressAsText());
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
      this.pendingUpgrades.delete(res);
    });
    this.pendingUpgrades.add(res);
    const refuse = (r: Refusal) =>
      res.cork(() => {
        res
          .writeStatus(r.status)
          .writeHeader('content-type', 'application/json')
          .end(JSON.stringify({ error: { message: r.message, code: r.code } }));
      });
    void this.authenticate(secret, peer, forwardedFor).then(
      (outcome) => {
        if (aborted) return;
        this.pendingUpgrades.delete(res);
        if (this.closing) return refuse(SHUTTING_DOWN);
        if ('status' in outcome) return refuse(outcome);
        const auth = outcome;
        if (secretInQuery && auth.kind !== 'session_token') return refuse(API_KEY_IN_QUERY);
        if (kind === 'sts' && auth.kind === 'session_token' && auth.conversationIds !== null)
          return refuse(SCOPED_TOKEN);
        if (
          kind === 'observer' &&
          auth.kind === 'session_token' &&
          auth.conversationIds !== null &&
          !auth.conversationIds.includes(observed!)
        ) {
          return refuse(NOT_IN_SCOPE);
        }
        const origin = (CONVERSATION_ORIGINS as readonly string[]).includes(originParam ?? '')
          ? (originParam as ConversationOrigin['origin'])
          : 'direct';
        // The fields every client frame reads first (V8 lays them out in this order).
        const data: SocketData = {
          relayId: null,
          kind,
          ...newAttachment(),
          sink: null,
          auth,
          conversationId: observed ?? reconnectId,
          origin,
          relayPaused: false,
          closed: false,
          paused: false,
        };
        upgradeAfterAwait(res, data, { key, protocol, extensions, context });
      },
      (err: Error) => {
        this.opts.log.error({ err }, 'sts: authentication failed');
        this.pendingUpgrades.delete(res);
        if (!aborted)
          refuse({ status: '503 Service Unavailable', message: 'authentication is unavailable', code: 'unavailable' });
      },
    );
  }

  private async authenticate(
    secret: string | null,
    peer: string,
    forwardedFor: string | undefined,
  ): Promise<Auth | Refusal> {
    if (!secret) return UNAUTHORIZED;
    const address = clientAddress(peer, forwardedFor, this.opts.trustedProxies);
    try {
      return (await this.opts.main.request('authenticate', { secret, clientAddress: address })) ?? UNAUTHORIZED;
    } catch (err) {
      if (err instanceof MainRequestError && err.status === 403)
        return { status: '403 Forbidden', message: err.message, code: err.code ?? 'forbidden' };
      throw err;
    }
  }

  private opened(ws: WebSocket<SocketData>): void {
    const d = ws.getUserData();
    const sink = new SocketSink(ws, d);
    d.sink = sink;
    this.sockets.add(ws);
    if (d.kind === 'sts' && d.conversationId === null) {
      if (this.draining) return sink.end(CLOSE_RESTARTING, RESTARTING);
      return this.host.open(d, sink, d.auth, d.origin);
    }
    const id = d.conversationId!;
    const local =
      d.kind === 'observer' ? this.host.observe(d, sink, d.auth, id) : this.host.reconnect(d, sink, d.auth, id);
    if (local) return;
    this.relay(ws, d.kind === 'observer' ? 'observer' : 'reconnect', id);
  }

  private relay(ws: WebSocket<SocketData>, kind: RelayKind, conversationId: string): void {
    const d = ws.getUserData();
    // Unique across workers: main keys relays by this id.
    const relayId = this.opts.workerId * 2 ** 32 + this.nextRelay++;
    d.relayId = relayId;
    this.relayed.set(relayId, ws);
    this.opts.post({ type: 'relay_request', relayId, conversationId, kind, auth: d.auth });
  }

  private received(ws: WebSocket<SocketData>, message: ArrayBuffer, isBinary: boolean): void {
    const d = ws.getUserData();
    if (d.relayId !== null) {
      // The buffer is neutered after this callback: what crosses threads is a copy.
      const data = isBinary ? message.slice(0) : Buffer.from(message).toString('utf8');
      this.opts.post({ type: 'relay_from_socket', relayId: d.relayId, data, binary: isBinary });
      return;
    }
    if (d.kind === 'observer') return; // observers only listen
    if (d.closed) return; // closed by us (a drain) and still delivering what was in flight
    try {
      this.host.message(d, d.sink!, message, isBinary);
    } catch (err) {
      // A fault of ours while handling the client's frame: logged, told to the client, socket closed.
      this.opts.log.error({ err, conversationId: d.entry?.id ?? null }, 'sts: handling a client frame failed');
      d.sink!.text(JSON.stringify({ type: 'error', error: { message: 'internal error', code: 'internal_error' } }));
      d.sink!.end(CLOSE_INTERNAL, 'internal error');
    }
  }

  /** uWS close: `code` is the client's close frame's (1005 without a code), 1006 when the connection dropped, or ours. */
  private closedSocket(ws: WebSocket<SocketData>, code: number): void {
    const d = ws.getUserData();
    d.closed = true;
    this.sockets.delete(ws);
    if (d.relayId !== null) {
      this.relayed.delete(d.relayId);
      // The owner decides, as for a socket of its own, whether this close ends the conversation (live-host.ts dropped).
      this.opts.post({ type: 'relay_closed', relayId: d.relayId, code, reason: 'socket closed' });
      return;
    }
    this.host.dropped(d, d.sink!, code);
  }

  /** Every open socket with what it holds unsent (worker-protocol.ts `inspect`). */
  inspect(): SocketInspection[] {
    return [...this.sockets].map((ws) => {
      const d = ws.getUserData();
      return {
        kind: d.kind,
        conversationId: d.entry?.id ?? d.conversationId,
        relayed: d.relayId !== null,
        bufferedBytes: d.closed ? 0 : ws.getBufferedAmount(),
        audioPaused: d.paused,
      };
    });
  }

  // ---- relays from main ----

  /** This worker owns the conversation a socket elsewhere asked for. */
  relayOpen(relayId: number, kind: RelayKind, auth: Auth, conversationId: string): void {
    const sink = new RelaySink(relayId, this.opts.post, () => this.relaySinks.delete(relayId));
    this.relaySinks.set(relayId, sink);
    this.host.relayOpen(relayId, kind, auth, conversationId, sink);
  }

  /** Output of a conversation on another worker, for a socket here; the backpressure policy applies here. */
  relayToSocket(relayId: number, data: string | ArrayBuffer, binary: boolean): void {
    const d = this.relayed.get(relayId)?.getUserData();
    const sink = d?.sink;
    if (!sink) return;
    if (binary) sink.audio(new Uint8Array(data as ArrayBuffer));
    else sink.text(data as string);
    this.reportRelayFlow(d);
  }

  /**
   * Tells the owner of a relayed socket's conversation when the socket crosses the audio marks (relay_flow):
   * only the owner knows which text frames are audio, so it is the owner that stops offering them.
   */
  private reportRelayFlow(d: SocketData): void {
    if (d.relayId === null || d.closed || !d.sink) return;
    const paused = !d.sink.writable;
    if (paused === d.relayPaused) return;
    d.relayPaused = paused;
    this.opts.post({ type: 'relay_flow', relayId: d.relayId, paused });
  }

  /** The socket of a relay this worker owns crossed an audio mark on its own worker. */
  relayFlow(relayId: number, paused: boolean): void {
    this.relaySinks.get(relayId)?.flow(paused);
  }

  relayClosed(relayId: number, code: number, reason: string): void {
    const ws = this.relayed.get(relayId);
    if (ws) {
      this.relayed.delete(relayId);
      ws.getUserData().relayId = null;
      ws.getUserData().sink?.end(code || CLOSE_NOT_LIVE, reason);
      return;
    }
    this.relaySinks.get(relayId)?.detach();
    this.host.relayClosed(relayId, code);
  }

  /**
   * The node drains (docs/operations.md, "Drain"): STS sockets not configured yet close with 1012 `restarting` (the
   * client reconnects, to a node that runs), and so does every new one; configured conversations, reconnects within
   * their grace and observers go on.
   */
  drain(): void {
    this.draining = true;
    for (const ws of this.sockets) {
      const d = ws.getUserData();
      if (d.kind === 'sts' && d.relayId === null && !d.configured && d.conversationId === null)
        d.sink?.end(CLOSE_RESTARTING, RESTARTING);
    }
  }

  /**
   * Shutdown, in the order uWS needs (docs/ARCHITECTURE.md, "Process shape": a worker ending with an open socket
   * aborts Node): stop accepting, drop upgrades still authenticating, end and save conversations, close every socket
   * (gracefully, then by force after SOCKET_CLOSE_GRACE_MS), close the app.
   */
  async close(graceMs: number): Promise<void> {
    this.closing = true;
    if (this.listenSocket) closeListenSocket(this.listenSocket);
    this.listenSocket = null;
    for (const res of this.pendingUpgrades) res.close();
    this.pendingUpgrades.clear();
    await this.host.endAll(graceMs);
    for (const ws of [...this.sockets]) {
      const d = ws.getUserData();
      if (!d.closed) {
        d.closed = true;
        ws.end(CLOSE_RESTARTING, RESTARTING);
      }
    }
    const deadline = Date.now() + SOCKET_CLOSE_GRACE_MS;
    while (this.sockets.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    for (const ws of [...this.sockets]) ws.close();
    this.app?.close();
    this.app = null;
  }

  /**
   * The thread is ending without a shutdown (an uncaught error, process.exit): closes the listen socket and the app
   * (and with it every socket) at once, synchronously, as the thread's 'exit' handler must. Without it Node aborts
   * the whole process when the thread's event loop closes with uWS's handles open. A no-op after close().
   */
  closeNow(): void {
    this.closing = true;
    if (this.listenSocket) closeListenSocket(this.listenSocket);
    this.listenSocket = null;
    this.app?.close();
    this.app = null;
  }
}
