// sip/transaction: RFC 3261 17 transactions (RFC 6026 applied), each an explicit state machine in two files
// (`*.fsm.ts` pure transitions on inputs named after the RFC timers and events; `*.ts` data and API).
//
//   const layer = new TransactionLayer(transport, { request(req, tx, source), strayResponse?, dropped? },
//                                      { clock?, timers?: { T1, T2, T4 }, validate?, autoTrying? })
//   transport handlers: message -> layer.receive(msg, source); invalid -> layer.receiveInvalid(err, source)
//   layer.sendRequest(req, target, { response, timeout?, transportError?, terminated? }) -> client tx
//   layer.cancel(inviteTx)                        CANCEL per 9.1 (waits for a provisional response)
//   layer.sendStateless(ack, target)              the ACK for a 2xx (13.2.2.4)
//   serverTx.respond(res) -> boolean              responses from the TU; serverTx.handlers = { ack, timeout,
//                                                 transportError, cancelled, terminated }
// New INVITE server transactions send 100 Trying at once; invalid requests are answered (400/416/420/505...)
// before the TU sees them; CANCEL is answered 200 (+487 to the INVITE) or 481 (9.2).
// Timers come from T1/T2/T4 in timers.ts through an injected Clock (ManualClock for tests).
// Errors: TransactionTimeoutError (B, F, H), TransportError, from sip/errors.ts.
export {
  TransactionLayer,
  type LayerHandlers,
  type LayerOptions,
  type ClientTransaction,
  type ServerTransaction,
} from './layer.js';
export { ClientInviteTransaction, buildAck, type ClientTransactionHandlers } from './client-invite.js';
export { ClientNonInviteTransaction } from './client-non-invite.js';
export { ServerInviteTransaction } from './server-invite.js';
export type { ServerTransactionHandlers } from './server-machine.js';
export { ServerNonInviteTransaction } from './server-non-invite.js';
export {
  clientInviteTransition,
  type ClientInviteState,
  type ClientInviteInput,
  type ClientInviteAction,
  type Step,
} from './client-invite.fsm.js';
export {
  clientNonInviteTransition,
  type ClientNonInviteState,
  type ClientNonInviteInput,
} from './client-non-invite.fsm.js';
export { serverInviteTransition, type ServerInviteState, type ServerInviteInput } from './server-invite.fsm.js';
export {
  serverNonInviteTransition,
  type ServerNonInviteState,
  type ServerNonInviteInput,
} from './server-non-invite.fsm.js';
export { clientKey, serverKey, responseKey, buildCancel, toTagOf } from './keys.js';
export { DEFAULT_TIMERS, initialDuration, backoff, TimerSet, type TimerValues, type TimerName } from './timers.js';
export { ManualClock, systemClock, type Clock, type TimerHandle } from './clock.js';
export type { TransactionTransport, TransactionContext } from './machine.js';
