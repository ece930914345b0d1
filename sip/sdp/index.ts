export { parseSdp, serializeSdp, SdpParseError } from './parse.js';
export * from './types.js';
export * from './media.js';
export * from './offer-answer.js';
