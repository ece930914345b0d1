// Parley's SIP stack as a library (imports nothing from src/). The public API:
//   const ua = await createUserAgent({ host, port, transports: ['udp', 'tcp'], clock?, timers?, auth? })
//   ua.on('invite', (req, res) => ua.createUAS(req, { media } | { localSdp }))   -> Dialog
//   await ua.createUAC('sip:x@host', { media | localSdp, headers?, auth?: { username, password } }) -> Dialog
//   dialog.on('ended' | 'modified' | 'refer' | 'info' | 'notify', ...); 'error' (dialog, ua): failures of
//   background work, emitted only to listeners, never thrown (DialogEvents.error)
//   dialog.bye(), dialog.reinvite(sdp | { direction }), dialog.refer(target), dialog.info(body), dialog.request(method)
// Errors: SipError(status, reason), TransactionTimeoutError, TransportError, SdpParseError.
export { createUserAgent, type CreateUserAgentOptions, type SipTrafficObserver } from './ua/create.js';
export {
  UserAgent,
  type InviteRequest,
  type InviteResponder,
  type UasOptions,
  type UacOptions,
  type UserAgentEvents,
} from './ua/user-agent.js';
export {
  Dialog,
  type DialogEvents,
  type EndReason,
  type ReferEvent,
  type ReferRequest,
  type ReferRefusal,
  type InfoEvent,
  type NotifyEvent,
  type DialogSender,
} from './dialog/dialog.js';
export { SipError, SipParseError, TransactionTimeoutError, TransportError } from './errors.js';
export { DigestClient, type DigestUser } from './auth/client.js';
export { DigestServer, type PasswordLookup, type VerifyResult } from './auth/server.js';
export { parseSdp, serializeSdp, SdpParseError } from './sdp/parse.js';
export {
  answerOffer,
  acceptAnswer,
  createOffer,
  type LocalMedia,
  type NegotiatedMedia,
  type AudioCodecName,
} from './sdp/offer-answer.js';
export type { SessionDescription, Direction, Codec } from './sdp/types.js';
export { parseDtmfRelay, dtmfRelayBody, parseSipfrag } from './dialog/refer.js';
export { ManualClock, systemClock, type Clock } from './transaction/clock.js';
export type { SipRequest, SipResponse, SipMessage } from './message/types.js';
