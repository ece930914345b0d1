// sip/message: SIP message types, parser, serializer and helpers (RFC 3261 7, 19, 20, 25).
//
//   parseMessage(bytes, { stream? }) -> SipRequest | SipResponse      throws SipParseError (status, partial)
//   serializeMessage(msg) -> Buffer                                    Content-Length always from the body
//   new StreamFramer({ message, invalid, fatal, ping, pong }).push(chunk)   TCP byte stream -> messages
//   validateRequest(req, opts) -> Rejection | null                    400/415/416/420/483/505 a UAS owes
//   validateResponse(res) -> string | null                            why a response must be dropped
//   msg.headers: Headers (ordered; get, getAll splits comma lists, add, prepend, set, delete)
//   parseUri / serializeUri / uriEquals, parseNameAddr / serializeNameAddr, parseVia / serializeVia,
//   parseCSeq; accessors topVia, viasOf, fromOf, toOf, callIdOf, cseqOf, contactsOf;
//   builders createRequest, createResponse (RFC 3261 8.2.6), newBranch, newTag, newCallId.
// Header values are raw strings (folding undone, compact names expanded); structured values are parsed
// on demand, so a message is cheap to route and forward.
export * from './types.js';
export { Headers, canonicalName, isListHeader, splitList } from './headers.js';
export { parseMessage, findHeaderEnd, MAX_CONTENT_LENGTH, type ParseOptions } from './parser.js';
export { serializeMessage, serializeHead } from './serializer.js';
export { StreamFramer, MAX_HEAD_BYTES, type FramerHandlers } from './framer.js';
export { validateRequest, validateResponse, type Rejection, type ValidateOptions } from './validate.js';
export { parseUri, serializeUri, uriEquals, isSipUri, unescapeUriPart, sipUri } from './uri.js';
export {
  parseNameAddr,
  serializeNameAddr,
  tagOf,
  parseVia,
  serializeVia,
  branchOf,
  parseCSeq,
  serializeCSeq,
} from './address.js';
export { quote, unquoteParam, parseParams, serializeParams, isToken } from './syntax.js';
export {
  topVia,
  viasOf,
  fromOf,
  toOf,
  callIdOf,
  cseqOf,
  contactsOf,
  newBranch,
  newTag,
  newCallId,
  createRequest,
  createResponse,
  REASON_PHRASES,
  type RequestInit,
  type ResponseOptions,
} from './access.js';
