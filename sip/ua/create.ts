// createUserAgent: one SIP endpoint (UDP and TCP on one port) = transport + transaction layer + UA core.
// The adapter between the transaction layer's API and the UA's TxLayer interface lives here only.

import type { SipRequest, SipResponse } from '../message/types.js';
import { TransactionLayer } from '../transaction/layer.js';
import { ServerInviteTransaction } from '../transaction/server-invite.js';
import type { Clock } from '../transaction/clock.js';
import { DEFAULT_TIMERS, type TimerValues } from '../transaction/timers.js';
import { SipTransport } from '../transport/transport.js';
import type { Source, Target, TransportName } from '../transport/types.js';
import type { DigestServer } from '../auth/server.js';
import type { ClientTx, TxLayer } from './tx-layer.js';
import { UserAgent } from './user-agent.js';

export interface CreateUserAgentOptions {
  /** Address to bind (default 127.0.0.1); also the host of our Contact and Via. */
  host?: string;
  /** Port for UDP and TCP (0 picks a free one). */
  port?: number;
  /** Transports placed calls prefer, first one by default (both are always listened on). */
  transports?: Array<'udp' | 'tcp'>;
  /** Host advertised in Via/Contact when it differs from the bound one. */
  advertisedHost?: string;
  clock?: Clock;
  timers?: Partial<TimerValues>;
  /** Challenge inbound INVITEs with digest (RFC 3261 22.1). */
  auth?: DigestServer;
  userAgent?: string;
  minSessionExpiresSec?: number;
  /** Close TCP connections unheld and silent this long (TransportOptions.idleTimeoutMs). */
  tcpIdleTimeoutMs?: number;
  /** Called for messages dropped or answered statelessly below the UA (for logs). */
  onDropped?: (reason: string, source: Source) => void;
  /** Sees every message parsed in and every request and response sent (metrics); must not throw. */
  observer?: SipTrafficObserver;
}

/**
 * A tap on the traffic: `received` for each message the transport parsed; `sent` once per request (its
 * retransmissions are the same request) and once per response sent, a retransmitted response included.
 */
export interface SipTrafficObserver {
  received(msg: SipRequest | SipResponse): void;
  sent(msg: SipRequest | SipResponse): void;
}

export async function createUserAgent(opts: CreateUserAgentOptions = {}): Promise<UserAgent> {
  let layer: TransactionLayer | null = null;
  let ua: UserAgent | null = null;
  const early: Array<() => void> = [];
  const transport = await SipTransport.listen(
    {
      message: (msg, source) => {
        opts.observer?.received(msg);
        if (layer) layer.receive(msg, source);
        else early.push(() => layer!.receive(msg, source));
      },
      invalid: (err, source) => layer?.receiveInvalid(err, source),
    },
    {
      host: opts.host ?? '127.0.0.1',
      port: opts.port ?? 0,
      advertisedHost: opts.advertisedHost,
      idleTimeoutMs: opts.tcpIdleTimeoutMs,
    },
  );
  const timers: TimerValues = { ...DEFAULT_TIMERS, ...opts.timers };
  const observer = opts.observer;
  const layerTransport = observer
    ? {
        prepareRequest: (req: SipRequest, target: Target) => {
          observer.sent(req);
          return transport.prepareRequest(req, target);
        },
        sendBytes: (bytes: Buffer, target: Target) => transport.sendBytes(bytes, target),
        sendResponseBytes: (bytes: Buffer, res: SipResponse, source?: Source) => {
          observer.sent(res);
          return transport.sendResponseBytes(bytes, res, source);
        },
        holdConnection: (at: Source | Target) => transport.holdConnection(at),
        get sentBy() {
          return transport.sentBy;
        },
      }
    : transport;
  layer = new TransactionLayer(
    layerTransport,
    {
      request: (req, tx, source) => {
        if (tx instanceof ServerInviteTransaction) tx.handlers.cancelled = () => ua!.cancelled(req);
        ua!.request(req, source, tx ?? null);
      },
      strayResponse: (res, source) => ua!.strayResponse(res, source),
      dropped: opts.onDropped,
    },
    { clock: opts.clock, timers },
  );
  const l = layer;
  const tx: TxLayer = {
    send(req, target, handlers): ClientTx {
      let finalSeen = false;
      const ct = l.sendRequest(req, target, {
        response: (res: SipResponse) => {
          if (res.status < 200) return handlers.provisional?.(res);
          // RFC 6026 7.2: every 2xx reaches the TU; the ones after the first are retransmissions to ACK again.
          if (finalSeen)
            return ua!.strayResponse(res, { transport: target.transport, address: target.address, port: target.port });
          finalSeen = true;
          handlers.final(res);
        },
        timeout: (err) => {
          if (!finalSeen) handlers.error(err);
        },
        transportError: (err) => {
          if (!finalSeen) {
            finalSeen = true;
            handlers.error(err);
          }
        },
      });
      return {
        cancel: () => {
          if (ct.kind === 'client-invite') l.cancel(ct);
        },
      };
    },
    sendStateless(req: SipRequest, target) {
      l.sendStateless(req, target).catch((err: Error) => ua!.reportBackgroundError(err));
    },
    resendResponse(res: SipResponse) {
      transport.sendResponse(res).catch((err: Error) => ua!.reportBackgroundError(err));
    },
    holdConnection: (at) => transport.holdConnection(at),
    get tcpConnectionCount() {
      return transport.tcpConnectionCount;
    },
    get sentBy() {
      return transport.sentBy;
    },
    close: () => transport.close(),
  };
  const transports: TransportName[] = (opts.transports ?? ['udp', 'tcp']).map((t) => (t === 'tcp' ? 'TCP' : 'UDP'));
  ua = new UserAgent({
    tx,
    host: opts.advertisedHost ?? transport.host,
    port: transport.port,
    transports,
    clock: opts.clock,
    timers,
    auth: opts.auth,
    userAgent: opts.userAgent,
    minSessionExpiresSec: opts.minSessionExpiresSec,
  });
  for (const run of early) run();
  return ua;
}
