// An agent's phone numbers, one at a time: assign a custom number (or change its configuration endpoint) and
// release one. Both run under the agent's write lock, so a concurrent write of the agent is a conflict (retry)
// rather than a wait, and each change is a new version of the agent.
import type { ConfigurationEndpoint } from '../schemas/agents.js';
import {
  addPhone,
  bumpVersion,
  phoneOwner,
  phonesOf,
  recordVersion,
  removePhones,
  setPhoneEndpoint,
} from '../store/agents.js';
import { agentDisabled, withAgentLock } from './agent-write.js';
import { findAgent } from './agents.js';
import type { DomainContext } from './context.js';
import { DomainError, notFound } from './errors.js';

/**
 * Assigns `number` to the agent as a custom number, or (already its own) sets the number's configuration endpoint
 * when `endpoint` is given (null clears it). Invalid when another agent has the number; conflict when the agent
 * is disabled or being written.
 */
export async function assignPhoneNumber(
  ctx: DomainContext,
  orgId: string,
  project: string,
  nameOrId: string,
  number: string,
  endpoint: ConfigurationEndpoint | null | undefined,
): Promise<void> {
  const { row } = await findAgent(ctx.sql, orgId, project, nameOrId);
  if (!row.enabled) throw agentDisabled(row.name);
  await withAgentLock(ctx, row.id, async (tx) => {
    const owner = await phoneOwner(tx, number);
    if (owner && owner.agent_id !== row.id) {
      throw new DomainError('invalid', `invalid parameter phone_number: ${number} is already assigned`, {
        paramErrors: { phone_number: `${number} is already assigned to another agent` },
      });
    }
    if (!owner) {
      await addPhone(tx, {
        number,
        agentId: row.id,
        orgId: row.org_id,
        kind: 'custom',
        configurationEndpoint: endpoint ?? null,
      });
    } else if (endpoint !== undefined) {
      await setPhoneEndpoint(tx, number, endpoint);
    } else {
      return; // already this agent's number, nothing sent to change
    }
    await recordVersion(tx, await bumpVersion(tx, row.id));
  });
}

/**
 * Releases the agent's custom number `number`. Not found when no agent of the workspace has it; invalid when another
 * agent has it, when it was assigned automatically, or when it is the last number of an agent whose inbound_rollout
 * is below 1 (calls not taken by the agent are forwarded, which needs a number).
 */
export async function releaseCustomPhoneNumber(
  ctx: DomainContext,
  orgId: string,
  project: string,
  nameOrId: string,
  number: string,
): Promise<void> {
  const { row } = await findAgent(ctx.sql, orgId, project, nameOrId);
  if (!row.enabled) throw agentDisabled(row.name);
  await withAgentLock(ctx, row.id, async (tx) => {
    const owner = await phoneOwner(tx, number);
    if (!owner || owner.org_id !== row.org_id) throw notFound('phone number', number);
    if (owner.agent_id !== row.id) {
      throw new DomainError('invalid', `invalid parameter phone_number: ${number} is not assigned to this agent`, {
        paramErrors: { phone_number: `${number} is not assigned to agent '${row.name}'` },
      });
    }
    if (owner.kind !== 'custom') {
      throw new DomainError('invalid', `invalid parameter phone_number: ${number} is not a custom number`, {
        paramErrors: {
          phone_number: `${number} was assigned automatically, not a custom number (release it with phone_number null)`,
        },
      });
    }
    const left = ((await phonesOf(tx, [row.id])).get(row.id) ?? []).length - 1;
    if (left === 0 && row.config.inbound_rollout < 1) {
      throw new DomainError(
        'invalid',
        'invalid parameter phone_number: the agent needs a number while inbound_rollout is below 1.0',
        {
          paramErrors: {
            phone_number: 'is the last number of an agent whose inbound_rollout is below 1.0 (set it to 1 first)',
          },
        },
      );
    }
    await removePhones(tx, row.id, [number]);
    await recordVersion(tx, await bumpVersion(tx, row.id));
  });
}
