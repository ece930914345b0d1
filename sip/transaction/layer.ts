// The transaction layer (RFC 3261 17): creates client transactions for outgoing requests, matches incoming
// responses to them (17.1.3) and incoming requests to server transactions (17.2.3), absorbs retransmissions,
// answers CANCEL (9.2), rejects malformed requests (8.2, RFC 4475), and hands new requests up to the TU.
import { SipParseError, TransportError } from '../errors.js';
import { parseVia, serializeVia } from '../message/address.js';
import { createResponse, newBranch, newTag } from '../message/access.js';
import { serializeMessage } from '../message/serializer.js';
import type { SipRequest, SipResponse } from '../message/types.js';
import { validateRequest, validateResponse, type ValidateOptions } from '../message/validate.js';
import type { Source, Target } from '../transport/types.js';
import { ClientInviteTransaction, type ClientTransactionHandlers } from './client-invite.js';
import { ClientNonInviteTransaction } from './client-non-invite.js';
import { systemClock, type Clock } from './clock.js';
import { buildCancel, clientKey, responseKey, serverKey, toTagOf } from './keys.js';
import type { TransactionContext, TransactionTransport } from './machine.js';
import { ServerInviteTransaction } from './server-invite.js';
import { ServerNonInviteTransaction } from './server-non-invite.js';
import { DEFAULT_TIMERS, type TimerValues } from './timers.js';

export type ClientTransaction = ClientInviteTransaction | ClientNonInviteTransaction;
export type ServerTransaction = ServerInviteTransaction | ServerNonInviteTransaction;

export interface LayerHandlers {
  /**
   * A request no transaction matched. For everything but ACK a server transaction was created: respond
   * through `tx.respond`. An unmatched ACK (the ACK for a 2xx, RFC 3261 13.2.2.4, 17.2.3) has `tx` undefined.
   */
  request(req: SipRequest, tx: ServerTransaction | undefined, source: Source): void;
  /** A response no client transaction matched (e.g. a 2xx retransmitted after Timer M; RFC 6026 8.4). */
  strayResponse?(res: SipResponse, source: Source): void;
  /** Something was dropped or answered statelessly; for logs. */
  dropped?(reason: string, source: Source): void;
}

export interface LayerOptions {
  clock?: Clock;
  timers?: Partial<TimerValues>;
  /** Checks run on new requests before the TU sees them (RFC 3261 8.2); false to skip. Default {}. */
  validate?: ValidateOptions | false;
  /** Send 100 Trying as soon as an INVITE server transaction is created (RFC 3261 17.2.1). Default true. */
  autoTrying?: boolean;
}

type LayerTransport = TransactionTransport & { sentBy?: string };

export class TransactionLayer {
  private readonly clients = new Map<string, ClientTransaction>();
  private readonly servers = new Map<string, ServerTransaction>();
  private readonly ctx: TransactionContext;
  private readonly validate: ValidateOptions | false;
  private readonly autoTrying: boolean;

  constructor(
    private readonly transport: LayerTransport,
    private readonly handlers: LayerHandlers,
    opts: LayerOptions = {},
  ) {
    this.ctx = {
      transport,
      clock: opts.clock ?? systemClock(),
      timers: { ...DEFAULT_TIMERS, ...opts.timers },
      terminated: (key) => {
        this.clients.delete(key);
        this.servers.delete(key);
      },
    };
    this.validate = opts.validate ?? {};
    this.autoTrying = opts.autoTrying ?? true;
  }

  get clientCount(): number {
    return this.clients.size;
  }

  get serverCount(): number {
    return this.servers.size;
  }

  /**
   * Send a request in a new client transaction. A missing top Via is added (sent-by of the transport, a new
   * branch, rport: RFC 3261 8.1.1.7, RFC 3581); a Via without branch gets one. ACK is not sent this way.
   */
  sendRequest(req: SipRequest, target: Target, handlers: ClientTransactionHandlers): ClientTransaction {
    if (req.method === 'ACK') throw new TypeError('ACK is sent without a transaction (RFC 3261 17.1.1.3, 13.2.2.4)');
    const branch = this.ensureBranch(req, target);
    const key = clientKey(branch, req.method);
    const tx =
      req.method === 'INVITE'
        ? new ClientInviteTransaction(this.ctx, key, req, target, handlers)
        : new ClientNonInviteTransaction(this.ctx, key, req, target, handlers);
    this.clients.set(key, tx);
    tx.start();
    return tx;
  }

  /**
   * Cancel an INVITE (RFC 3261 9.1): the CANCEL goes in its own client transaction to where the INVITE went,
   * at once if a provisional response arrived, else when the first one does; not after a final response.
   * Returns false when it is too late to cancel.
   */
  cancel(
    invite: ClientInviteTransaction,
    handlers: ClientTransactionHandlers = { response: () => undefined },
  ): boolean {
    const send = () => {
      this.sendRequest(buildCancel(invite.request), invite.sentTo, handlers);
    };
    if (invite.state === 'proceeding') {
      send();
      return true;
    }
    if (invite.state === 'calling') {
      invite.onProvisional = send;
      return true;
    }
    return false;
  }

  /** Send a request outside any transaction (the ACK for a 2xx, RFC 3261 13.2.2.4). */
  async sendStateless(req: SipRequest, target: Target): Promise<void> {
    this.ensureBranch(req, target);
    const prepared = this.transport.prepareRequest(req, target);
    await this.transport.sendBytes(prepared.bytes, prepared.target);
  }

  /** Feed a message from the transport. */
  receive(msg: SipRequest | SipResponse, source: Source): void {
    if (msg.kind === 'response') this.receiveResponse(msg, source);
    else this.receiveRequest(msg, source);
  }

  /** Feed a message the transport could not parse: answer it statelessly when possible (RFC 3261 8.2, 16.3). */
  receiveInvalid(err: SipParseError, source: Source): void {
    const partial = err.partial;
    if (partial?.kind === 'request' && partial.method !== 'ACK') {
      this.respondStateless(
        createResponse(partial, err.status, { reason: err.reason, toTag: newTag() }),
        source,
        err.message,
      );
    } else this.handlers.dropped?.(`unparseable message: ${err.message}`, source);
  }

  private receiveResponse(res: SipResponse, source: Source): void {
    const problem = validateResponse(res);
    if (problem !== null) return this.handlers.dropped?.(`response dropped: ${problem}`, source);
    // RFC 3261 8.1.3.3: a response with more than one Via is discarded by a UAC.
    if (res.headers.getAll('Via').length !== 1)
      return this.handlers.dropped?.('response with more than one Via', source);
    let key: string;
    try {
      key = responseKey(res);
    } catch (err) {
      if (!(err instanceof SipParseError)) throw err;
      return this.handlers.dropped?.(`response dropped: ${err.message}`, source);
    }
    const tx = this.clients.get(key);
    if (tx) tx.receive(res);
    else if (this.handlers.strayResponse) this.handlers.strayResponse(res, source);
    else this.handlers.dropped?.('response matches no transaction', source);
  }

  private receiveRequest(req: SipRequest, source: Source): void {
    let key: string;
    try {
      key = serverKey(req).key;
    } catch (err) {
      if (!(err instanceof SipParseError)) throw err;
      if (req.method === 'ACK') return this.handlers.dropped?.(`ACK dropped: ${err.message}`, source);
      return this.respondStateless(
        createResponse(req, 400, { reason: 'Bad Request', toTag: newTag() }),
        source,
        err.message,
      );
    }
    const existing = this.servers.get(key);
    if (existing && this.matchesTags(existing, req)) {
      if (req.method === 'ACK') {
        // RFC 6026 7.1: an ACK matching an Accepted transaction belongs to the TU (the ACK for the 2xx).
        if (existing.state === 'accepted') this.handlers.request(req, undefined, source);
        else if (existing instanceof ServerInviteTransaction) existing.receiveAck(req);
        return;
      }
      existing.receiveRequest();
      return;
    }
    if (req.method === 'ACK') {
      // RFC 3261 17.1.1.3 / 17.2.3: an ACK is never answered; a malformed one is dropped.
      const rejection = this.validate === false ? null : validateRequest(req, this.validate);
      if (rejection !== null) return this.handlers.dropped?.(`ACK dropped: ${rejection.detail}`, source);
      this.handlers.request(req, undefined, source);
      return;
    }
    const tx =
      req.method === 'INVITE'
        ? new ServerInviteTransaction(this.ctx, key, req, source)
        : new ServerNonInviteTransaction(this.ctx, key, req, source);
    this.servers.set(key, tx);
    if (this.validate !== false) {
      const rejection = validateRequest(req, this.validate);
      if (rejection !== null) {
        const headers: Array<[string, string]> = rejection.unsupported
          ? [['Unsupported', rejection.unsupported.join(', ')]]
          : [];
        tx.respond(createResponse(req, rejection.status, { reason: rejection.reason, toTag: newTag(), headers }));
        this.handlers.dropped?.(`${req.method} answered ${rejection.status}: ${rejection.detail}`, source);
        return;
      }
    }
    if (req.method === 'CANCEL') return this.receiveCancel(req, tx as ServerNonInviteTransaction);
    if (tx instanceof ServerInviteTransaction && this.autoTrying) tx.respond(createResponse(req, 100));
    this.handlers.request(req, tx, source);
  }

  /** RFC 3261 9.2: 481 when no INVITE matches; else 200 to the CANCEL and 487 to a pending INVITE. */
  private receiveCancel(cancel: SipRequest, tx: ServerNonInviteTransaction): void {
    let invite: ServerTransaction | undefined;
    try {
      invite = this.servers.get(serverKey(cancel, 'INVITE').key);
    } catch (err) {
      if (!(err instanceof SipParseError)) throw err;
    }
    if (!(invite instanceof ServerInviteTransaction)) {
      tx.respond(createResponse(cancel, 481, { toTag: newTag() }));
      return;
    }
    const provisionalTag = invite.lastResponse ? toTagOf(invite.lastResponse) : undefined;
    tx.respond(createResponse(cancel, 200, { toTag: provisionalTag ?? newTag() }));
    if (invite.state === 'proceeding') {
      invite.respond(createResponse(invite.request, 487, { toTag: provisionalTag ?? newTag() }));
      invite.handlers.cancelled?.(cancel);
    }
  }

  /** RFC 3261 17.2.3 (RFC 2543 fallback): To tags decide between a retransmission and a new request. */
  private matchesTags(tx: ServerTransaction, req: SipRequest): boolean {
    if (serverKey(req).rfc3261) return true;
    if (req.method === 'ACK') {
      const sent = tx.lastResponse ? toTagOf(tx.lastResponse) : undefined;
      return toTagOf(req) === sent;
    }
    return toTagOf(req) === toTagOf(tx.request);
  }

  private respondStateless(res: SipResponse, source: Source, why: string): void {
    this.handlers.dropped?.(`answered ${res.status} statelessly: ${why}`, source);
    this.transport.sendResponseBytes(serializeMessage(res), res, source).catch((err: unknown) => {
      const reason = err instanceof TransportError ? err.message : String(err);
      this.handlers.dropped?.(`stateless ${res.status} not sent: ${reason}`, source);
    });
  }

  /** Make sure the request's top Via has a branch (adding the whole Via if missing); returns the branch. */
  private ensureBranch(req: SipRequest, target: Target): string {
    const top = req.headers.first('Via');
    if (top === undefined) {
      const branch = newBranch();
      const sentBy = this.transport.sentBy ?? '127.0.0.1';
      req.headers.prepend('Via', `SIP/2.0/${target.transport} ${sentBy};branch=${branch};rport`);
      return branch;
    }
    const via = parseVia(top);
    const existing = via.params.get('branch');
    if (existing) return existing;
    const branch = newBranch();
    via.params.set('branch', branch);
    req.headers.replaceFirst('Via', serializeVia(via));
    return branch;
  }
}
