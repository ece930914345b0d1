// The built-in transfer to a phone number (built_in_transfer_to_phone_number), as a live conversation sees it: the
// request its tool call makes of the call (a phone call's client carries it out: docs/telephony.md, "Transfers"),
// and what comes back. Which way the call is handed over follows the tool's fields, with the API's defaults:
// keep_listening false and no digits: SIP REFER (a bridge when the trunk refuses it); otherwise a bridged second leg.
// Pure.
import type { ToolDefinition } from '../../schemas/tools.js';
import type { EngineTool } from '../../engines/engine.js';
import type { AnsweredBy } from '../answered-by.js';

/** What a transfer asks of the call. */
export interface PhoneTransferRequest {
  /** E.164: the tool's phone_number, or the number the model chose when the tool has none. */
  phoneNumber: string;
  /** Digits sent on the new leg once it answers (tool dtmf, or the model's with dynamic_dtmf); w or , pause. */
  dtmf: string | null;
  /** The agent stays on the bridge, listening; false: it leaves once the transfer connects. */
  keepListening: boolean;
  /** The new leg presents the agent's number; false: the caller's. */
  useAgentPhoneNumber: boolean;
  /** Spoken into the bridged call once it connects (keep_listening only). */
  postTransferMessage: string | null;
  /** A leg that is not answered: back to the agent at once, or dialled again up to the retry cap first. */
  onNoAnswer: 'return_to_assistant' | 'keep_retrying';
  detectVoicemail: boolean;
}

/**
 * How the transfer went, as the call reports it. `transferred`: the agent's part is over (REFER accepted and
 * completed, or a bridge it left has ended); the conversation ends. `bridge_ended`: the agent listened on a bridge
 * until the target hung up; the caller is back with it. `no_answer` / `failed`: nobody was connected; the caller is
 * back with the agent, which is told why.
 */
export type PhoneTransferResult =
  | {
      outcome: 'transferred' | 'bridge_ended';
      method: 'refer' | 'bridge';
      phone_number: string;
      /** Why REFER was not used or did not complete (a bridge took over), if it was tried or ruled out. */
      refer_refused?: string;
      /** Seconds the two parties were bridged through Parley (bridged transfers). */
      bridge_duration_sec?: number;
      /** Who hung up the bridge. */
      ended_by_party?: 'caller' | 'target';
      attempts?: number;
      /** detect_voicemail: who answered the (last) dial of the target. */
      answered_by?: AnsweredBy;
    }
  | {
      outcome: 'no_answer' | 'failed';
      phone_number: string;
      reason: string;
      attempts: number;
      answered_by?: AnsweredBy;
    };

/** Events of a transfer in progress the conversation acts on. */
export interface PhoneTransferHooks {
  /** The bridge connected (the target answered): the agent leaves the media, or listens (keep_listening). */
  connected(): void;
}

/** The transfer fields of a phone-transfer definition with the API's defaults. */
export function transferSettings(
  def: ToolDefinition,
): Omit<PhoneTransferRequest, 'phoneNumber' | 'dtmf'> & { dynamicDtmf: boolean; fixedDtmf: string | null } {
  const useAgentPhoneNumber = def.use_agent_phone_number ?? true;
  const keepListening = def.keep_listening ?? useAgentPhoneNumber;
  return {
    keepListening,
    useAgentPhoneNumber,
    postTransferMessage: keepListening ? (def.post_transfer_message ?? null) : null,
    onNoAnswer: keepListening ? (def.on_transfer_no_answer ?? 'return_to_assistant') : 'return_to_assistant',
    detectVoicemail: def.detect_voicemail ?? false,
    dynamicDtmf: def.dynamic_dtmf ?? false,
    fixedDtmf: def.dtmf ?? null,
  };
}

const E164 = /^\+[1-9]\d{1,14}$/;
/** A model's argument as text: a string as it is, a number written out, anything else none. */
const argumentText = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
const DTMF = /^[0-9A-Da-d*#wW,]*$/;

/** The request of one tool call (the model's arguments where the tool leaves them open), or why it is invalid. */
export function transferRequest(
  def: ToolDefinition,
  args: Readonly<Record<string, unknown>>,
): PhoneTransferRequest | { error: string } {
  const s = transferSettings(def);
  const phoneNumber = def.phone_number ?? argumentText(args.phone_number).trim();
  if (!E164.test(phoneNumber)) return { error: `not an E.164 phone number: ${phoneNumber}` };
  let dtmf = s.fixedDtmf;
  if (s.dynamicDtmf) {
    const chosen = argumentText(args.dtmf).trim();
    if (!DTMF.test(chosen)) return { error: `not DTMF digits: ${chosen}` };
    dtmf = chosen === '' ? null : chosen;
  }
  return {
    phoneNumber,
    dtmf,
    keepListening: s.keepListening,
    useAgentPhoneNumber: s.useAgentPhoneNumber,
    postTransferMessage: s.postTransferMessage,
    onNoAnswer: s.onNoAnswer,
    detectVoicemail: s.detectVoicemail,
  };
}

/** The function the engine sees: the number when the tool leaves it to the model, the digits with dynamic_dtmf. */
export function transferParameters(def: ToolDefinition): EngineTool['parameters'] {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  if (def.phone_number == null) {
    properties.phone_number = { type: 'string', description: 'The E.164 phone number to transfer the call to' };
    required.push('phone_number');
  }
  if (def.dynamic_dtmf)
    properties.dtmf = {
      type: 'string',
      description: 'DTMF digits to send once the transfer connects (0-9, *, #; w to pause), or empty',
    };
  return { type: 'object', properties, required };
}

/** What the engine reads as the call's output. */
export function transferOutput(r: PhoneTransferResult): string {
  switch (r.outcome) {
    case 'transferred':
      return `the call was transferred to ${r.phone_number}`;
    case 'bridge_ended':
      return `the transferred call with ${r.phone_number} ended; the caller is back with you`;
    case 'no_answer':
      return `the transfer to ${r.phone_number} was not answered (${r.reason}); the caller is still with you`;
    case 'failed':
      return `the transfer to ${r.phone_number} failed (${r.reason}); the caller is still with you`;
  }
}
