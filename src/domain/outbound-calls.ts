// Placing an outbound call, as the HTTP API asks for it and telephony does it: the interface the control plane
// calls (OutboundCalls, implemented by src/telephony/outbound-call.ts and wired by src/main.ts, so neither adapter
// imports the other), the ways a placed call fails, and the rules of what the call presents: its caller ID and
// the request's config over the agent's settings.
import type { OutboundCallConfig } from '../schemas/outbound-call.js';
import { phonesOf } from '../store/agents.js';
import type { Sql } from '../store/db.js';
import { DomainError } from './errors.js';
import type { OutboundCall } from './outbound-call.js';

/** A resolved outbound call (resolveOutboundCall) to a number, with the config the request sent. */
export interface OutboundCallRequest {
  orgId: string;
  /** E.164. */
  toPhoneNumber: string;
  call: OutboundCall;
  /** The request's `config` as sent (its fields override the agent's settings). */
  sent: OutboundCallConfig | undefined;
}

export interface OutboundCalls {
  /** Whether this node has a trunk that carries outbound calls. */
  readonly hasTrunk: boolean;
  /**
   * Places the call and waits for its outcome: the conversation id once the callee answered and the conversation
   * started. Throws DomainError: limit_reached `concurrency_limit_reached` (the project's cap), conflict
   * `no_answer` / `sip_call_failed` / `call_ended` (OUTBOUND_CALL_FAILURE), unavailable (no trunk, the node is
   * stopping or has no media worker), invalid `agent_required`. Aborting `signal` cancels the call.
   */
  place(request: OutboundCallRequest, signal: AbortSignal): Promise<{ conversationId: string }>;
}

/** The `error.code` of a placed call that did not connect (409). */
export const OUTBOUND_CALL_FAILURE = {
  /** Nobody picked up within the ring timeout, or the callee answered 408/480. */
  noAnswer: 'no_answer',
  /** The carrier or the callee refused the call (486, 603, 404, 5xx, ...) or could not be reached. */
  sipCallFailed: 'sip_call_failed',
  /** The call ended before it connected (a BYE right after the answer). */
  callEnded: 'call_ended',
} as const;
export type OutboundCallFailure = (typeof OUTBOUND_CALL_FAILURE)[keyof typeof OUTBOUND_CALL_FAILURE];

export const outboundCallFailed = (code: OutboundCallFailure, message: string) =>
  new DomainError('conflict', message, { code });

/** Fields of a call config that name the call's agent, not its settings. */
const NOT_OVERRIDES = new Set(['agent', 'project']);

/**
 * What the request's config changes of the agent's settings: the fields it sent, except the agent and project, with
 * a deprecated `languages` list read as default_language/additional_languages where those were not sent. Null when
 * it changes nothing.
 */
export function outboundOverrides(sent: OutboundCallConfig | undefined): Record<string, unknown> | null {
  if (!sent) return null;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(sent)) if (v !== undefined && !NOT_OVERRIDES.has(k)) out[k] = v;
  if (sent.languages?.length && sent.default_language === undefined) {
    out.default_language = sent.languages[0];
    if (sent.additional_languages === undefined) out.additional_languages = sent.languages.slice(1);
  }
  delete out.languages;
  return Object.keys(out).length > 0 ? out : null;
}

/**
 * The caller ID an outbound call presents: a random active number of the call's `outbound_number_pool` that is not
 * blocked, else the agent's own number (its first), else the trunk's `caller_id`; null when there is none.
 * `random` is uniform in [0, 1).
 */
export async function outboundCallerId(
  sql: Sql,
  call: OutboundCall,
  trunkCallerId: string | null,
  random: () => number = Math.random,
): Promise<string | null> {
  const pool = call.config.outbound_number_pool as { active: string[]; blocked: string[] } | null | undefined;
  if (pool) {
    const blocked = new Set(pool.blocked);
    const usable = pool.active.filter((n) => !blocked.has(n));
    if (usable.length > 0) return usable[Math.min(usable.length - 1, Math.floor(random() * usable.length))] ?? null;
  }
  if (call.agent) {
    const own = (await phonesOf(sql, [call.agent.agent.id])).get(call.agent.agent.id) ?? [];
    if (own[0]) return own[0].number;
  }
  return trunkCallerId;
}
