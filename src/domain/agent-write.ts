// Writing an agent: create, upsert and update. A write is judged on the agent as it will be (cross-field rules on
// the merged record, then what needs the database: names, tools, storage policy, voice, numbers), then applied in
// one transaction under the agent's write lock; each change is a new version kept in agent_versions.
import {
  agentDefaults,
  agentRuleIssues,
  applyDeprecatedLanguages,
  type AgentConfig,
  type AgentUpdateBody,
} from '../schemas/agents.js';
import {
  AgentBusyError,
  addPhone,
  agentWriteLocks,
  countEnabled,
  drawFreeNumber,
  findAgentId,
  insertAgent,
  lockAgentVersion,
  lockOrgEnablement,
  phoneOwner,
  phonesOf,
  recordVersion,
  removePhones,
  updateAgent,
  updateAgentAtVersion,
  type AgentRow,
  type PhoneKind,
  type PhoneRow,
  type Tx,
} from '../store/agents.js';
import { policyExists } from '../store/external-storage-policies.js';
import type { ProjectRow } from '../store/projects.js';
import { existingToolNames } from '../store/tools.js';
import { transaction } from '../store/transaction.js';
import type { DomainContext } from './context.js';
import { conflict, DomainError, invalidParams, notFound } from './errors.js';
import { hasVoice } from './voices.js';

/** Built-in tools an agent may name in `tools` and configure in `built_in_tool_configs`. */
export const BUILT_IN_TOOL_IDS = [
  'keypad_input',
  'natural_conversation_ending',
  'choose_not_to_respond',
  'web_search',
] as const;

/** PostgreSQL SQLSTATE 23505 unique_violation: a concurrent write took the same name or number first. */
const UNIQUE_VIOLATION = '23505';

/** Maps the store's "busy" and a lost race on a unique key to conflict `agent_busy` (retry); other errors pass. */
function busyOr(err: unknown): unknown {
  if (err instanceof AgentBusyError) return conflict('the agent is being updated; retry', 'agent_busy');
  if ((err as { code?: string }).code === UNIQUE_VIOLATION)
    return conflict('a concurrent write took this name or number; retry', 'agent_busy');
  return err;
}

/**
 * Runs a write of one agent in a transaction under its lock, given the agent's version as locked (null: gone).
 * Another write of the agent in flight is a conflict `agent_busy` at once, not a wait.
 */
export async function withAgentLock<T>(
  ctx: DomainContext,
  agentId: string,
  fn: (tx: Tx, lockedVersion: number | null) => Promise<T>,
): Promise<T> {
  try {
    return await agentWriteLocks(ctx).run(ctx.sql, agentId, fn);
  } catch (err) {
    throw busyOr(err);
  }
}

/** A disabled agent refuses changes (conflict `agent_disabled`). */
export const agentDisabled = (name: string) => conflict(`agent '${name}' is disabled`, 'agent_disabled');

interface PhoneTarget {
  number: string | null; // null: draw one from the inventory
  kind: PhoneKind;
}

/** The agent's phone numbers after the write, from its current ones and the directives sent. */
function planPhones(current: PhoneRow[], body: AgentUpdateBody, issues: Record<string, string>): PhoneTarget[] {
  const keep = current.map((p) => ({ number: p.number, kind: p.kind }));
  const custom = body.custom_phone_numbers;
  switch (body.phone_number) {
    case null:
      return [];
    case 'custom':
      if (!custom || custom.length === 0) {
        issues.custom_phone_numbers = 'is required (at least one number) when phone_number is custom';
        return keep;
      }
      return custom.map((number) => ({ number, kind: 'custom' }));
    case 'assign-automatically':
      // No effect when the agent already has a number.
      return keep.length > 0 ? keep : [{ number: null, kind: 'auto' }];
    case undefined:
      if (custom === undefined) return keep;
      return [
        ...keep.filter((p) => p.kind === 'auto'),
        ...custom.map((number) => ({ number, kind: 'custom' as const })),
      ];
  }
}

/** Only a release of phone numbers: what a disabled agent may still be updated with. */
function onlyReleasesPhones(body: AgentUpdateBody, current: PhoneRow[]): boolean {
  const keys = Object.keys(body).filter((k) => body[k as keyof AgentUpdateBody] !== undefined);
  if (keys.length === 0) return false;
  const customNow = new Set(current.filter((p) => p.kind === 'custom').map((p) => p.number));
  return keys.every((k) => {
    if (k === 'phone_number') return body.phone_number === null;
    if (k === 'custom_phone_numbers') return (body.custom_phone_numbers ?? []).every((n) => customNow.has(n));
    return false;
  });
}

/** Keys of the body that are configuration (everything but name, slug and the phone directives). */
const NOT_CONFIG = new Set(['name', 'slug', 'phone_number', 'custom_phone_numbers', 'custom_phone_number']);

/**
 * Whether two values are the same JSON, object key order aside (jsonb hands objects back in its own key order):
 * arrays item by item, objects key by key, other values as JSON.stringify writes them.
 */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const aObject = typeof a === 'object' && a !== null;
  const bObject = typeof b === 'object' && b !== null;
  if (!aObject || !bObject) return !aObject && !bObject && JSON.stringify(a) === JSON.stringify(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  const aKeys = Object.keys(a);
  if (aKeys.length !== Object.keys(b).length) return false;
  for (const k of aKeys) {
    if (!Object.hasOwn(b, k) || !sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
      return false;
  }
  return true;
}

interface Judged {
  name: string;
  slug: string | null;
  config: AgentConfig;
  phones: PhoneTarget[];
  sent: AgentUpdateBody;
}

/** Checks that need the database or the catalog: names taken, tools, the storage policy and the voice, numbers free. */
async function storeIssues(
  ctx: DomainContext,
  projectId: string,
  self: { id: string; name: string } | null,
  w: Judged,
  issues: Record<string, string>,
): Promise<void> {
  const { sql } = ctx;
  // References (tools, storage policy, voice) are checked when sent, so a tool deleted later does not make
  // every other change of the agent fail.
  if (w.sent.voice_id !== undefined && !hasVoice(ctx.settings, w.config.voice_id)) {
    issues.voice_id = `no voice '${w.config.voice_id}' in the catalog (see GET /v1/voices)`;
  }
  const selfId = self?.id ?? null;
  // The agent keeping its own name needs no look: the name is its (unique) own. A rename racing another
  // write of the same name is refused by the unique index (busyOr: conflict).
  if (self?.name !== w.name) {
    const byName = await findAgentId(sql, projectId, 'name', w.name);
    if (byName && byName !== selfId) issues.name = `an agent named '${w.name}' already exists in this project`;
  }
  if (w.slug !== null) {
    const bySlug = await findAgentId(sql, projectId, 'slug', w.slug);
    if (bySlug && bySlug !== selfId) issues.slug = `an agent with slug '${w.slug}' already exists in this project`;
  }
  const builtIn: readonly string[] = BUILT_IN_TOOL_IDS;
  const custom = w.sent.tools ? w.config.tools.filter((t) => !builtIn.includes(t)) : [];
  if (custom.length > 0) {
    const known = await existingToolNames(sql, projectId, custom);
    w.config.tools.forEach((t, i) => {
      if (!builtIn.includes(t) && !known.has(t))
        issues[`tools.${i}`] = `no built-in or custom tool named '${t}' in this project`;
    });
  }
  for (const key of Object.keys(w.config.built_in_tool_configs)) {
    if (!builtIn.includes(key))
      issues[`built_in_tool_configs.${key}`] = `'${key}' is not a built-in tool (${builtIn.join(', ')})`;
  }
  const policy = w.config.external_storage_policy;
  if (w.sent.external_storage_policy != null && policy !== null && !(await policyExists(sql, projectId, policy))) {
    issues.external_storage_policy = `no external storage policy named '${policy}' in this project`;
  }
  for (const [i, p] of w.phones.entries()) {
    if (p.number === null) continue;
    const owner = await phoneOwner(sql, p.number);
    if (owner && owner.agent_id !== selfId)
      issues[`custom_phone_numbers.${i}`] = `${p.number} is already assigned to another agent`;
  }
}

export interface WriteOutcome {
  row: AgentRow;
  /** The agent's phone numbers after the write, sorted by number. */
  phones: PhoneRow[];
  inserted: boolean;
  changed: boolean;
}

/**
 * Creates (`existing` undefined) or changes an agent of `project`. `upsert` replaces the configuration (fields not
 * sent take the upsert defaults; phone numbers stay unless sent); `update` changes only what is sent. Throws
 * invalid (paramErrors) for rule breaches, conflict for a disabled agent or a concurrent write.
 */
export async function writeAgent(
  ctx: DomainContext,
  orgId: string,
  project: Pick<ProjectRow, 'id' | 'name'>,
  existing: AgentRow | undefined,
  sent: AgentUpdateBody,
  mode: 'upsert' | 'update',
  existingPhones?: PhoneRow[],
): Promise<WriteOutcome> {
  const { sql, settings } = ctx;
  const body = applyDeprecatedLanguages(sent);
  if (body.custom_phone_number != null && body.custom_phone_numbers === undefined) {
    body.custom_phone_numbers = [body.custom_phone_number];
    body.phone_number ??= 'custom';
  }
  const current = existing ? (existingPhones ?? (await phonesOf(sql, [existing.id])).get(existing.id) ?? []) : [];
  if (existing && !existing.enabled && !(mode === 'update' && onlyReleasesPhones(sent, current))) {
    throw agentDisabled(existing.name);
  }

  const base: AgentConfig = mode === 'update' && existing ? structuredClone(existing.config) : agentDefaults();
  if (mode === 'upsert' && existing) base.integrations = existing.config.integrations; // update-only field
  const config = { ...base } as Record<string, unknown>;
  for (const [k, v] of Object.entries(body)) if (v !== undefined && !NOT_CONFIG.has(k)) config[k] = v;
  const cfg = config as unknown as AgentConfig;
  cfg.languages = [cfg.default_language, ...cfg.additional_languages];
  const name = body.name ?? existing!.name; // the create and upsert bodies require a name
  const slug = body.slug !== undefined ? body.slug : mode === 'update' && existing ? existing.slug : null;

  const issues: Record<string, string> = {};
  const phones = planPhones(current, body, issues);
  for (const issue of agentRuleIssues(cfg, { hasPhone: phones.length > 0 })) issues[issue.path] ??= issue.message;
  const self = existing ? { id: existing.id, name: existing.name } : null;
  await storeIssues(ctx, project.id, self, { name, slug, config: cfg, phones, sent: body }, issues);
  if (Object.keys(issues).length > 0) throw invalidParams(issues);

  // The numbers the write removes (gone, or changing kind) and those it adds or draws.
  const target = new Set(phones.filter((p) => p.number !== null).map((p) => p.number as string));
  const gone = current.filter(
    (p) => !target.has(p.number) || phones.find((q) => q.number === p.number)?.kind !== p.kind,
  );
  const kept = current.filter((p) => !gone.includes(p));
  const have = new Set(kept.map((p) => p.number));
  const added = phones.filter((p) => p.number === null || !have.has(p.number));
  const configChanged =
    existing !== undefined && !(name === existing.name && slug === existing.slug && sameJson(cfg, existing.config));

  const configured = settings.PARLEY_PHONE_NUMBERS.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const apply = async (tx: Tx, lockedVersion: number | null = null): Promise<WriteOutcome> => {
    let row: AgentRow;
    let inserted = false;
    if (!existing) {
      await lockOrgEnablement(tx, orgId);
      // New agents are enabled while the organization is under its maximum, disabled once at it.
      const enabled = (await countEnabled(tx, orgId)) < settings.PARLEY_MAX_ENABLED_AGENTS;
      row = await insertAgent(tx, { orgId, projectId: project.id, name, slug, enabled, config: cfg });
      inserted = true;
    } else {
      checkLockedVersion(existing, lockedVersion);
      row = existing;
    }
    await removePhones(
      tx,
      row.id,
      gone.map((p) => p.number),
    );
    const after = [...kept];
    for (const p of added) {
      const number = p.number ?? (await drawFreeNumber(tx, orgId, configured));
      if (number === null) {
        throw new DomainError('invalid', 'no free phone number to assign automatically', {
          paramErrors: { phone_number: 'no free phone number in the inventory' },
        });
      }
      await addPhone(tx, { number, agentId: row.id, orgId, kind: p.kind });
      after.push({ number, agent_id: row.id, org_id: orgId, kind: p.kind, configuration_endpoint: null });
    }
    after.sort(byNumber);
    const phonesChanged = gone.length > 0 || added.length > 0;
    if (configChanged || (existing && phonesChanged)) row = await updateAgent(tx, row.id, { name, slug, config: cfg });
    const changed = inserted || configChanged || phonesChanged;
    if (changed) await recordVersion(tx, row, after);
    return { row, phones: after, inserted, changed };
  };
  try {
    if (!existing) return await transaction(sql, (tx) => apply(tx));
    if (gone.length === 0 && added.length === 0) {
      return await writeKeepingPhones(ctx, existing, { name, slug, config: cfg }, kept.sort(byNumber), configChanged);
    }
    return await agentWriteLocks(ctx).run(sql, existing.id, apply);
  } catch (err) {
    throw busyOr(err);
  }
}

const byNumber = (a: PhoneRow, b: PhoneRow) => (a.number < b.number ? -1 : a.number > b.number ? 1 : 0);

/** What was judged must still be the agent: a write that ended between the read and the lock bumped it. */
function checkLockedVersion(existing: AgentRow, lockedVersion: number | null): void {
  if (lockedVersion === null) throw notFound('agent', existing.name);
  if (lockedVersion !== existing.version) throw new AgentBusyError(existing.id);
}

/**
 * The write of an existing agent whose phone numbers stay as they are (most writes): one statement under the
 * agent's locks (updateAgentAtVersion), or only the check of its version when nothing changed.
 */
async function writeKeepingPhones(
  ctx: DomainContext,
  existing: AgentRow,
  w: { name: string; slug: string | null; config: AgentConfig },
  phones: PhoneRow[],
  changed: boolean,
): Promise<WriteOutcome> {
  return agentWriteLocks(ctx).hold(existing.id, async () => {
    if (!changed) {
      checkLockedVersion(existing, await lockAgentVersion(ctx.sql, existing.id));
      return { row: existing, phones, inserted: false, changed: false };
    }
    const out = await updateAgentAtVersion(ctx.sql, existing.id, existing.version, w, phones);
    checkLockedVersion(existing, out.lockedVersion);
    return { row: out.row!, phones, inserted: false, changed: true };
  });
}
