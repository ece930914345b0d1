// Whether POST /v1/responses is open to a workspace: a chat model must be configured, and the workspace's
// `responses` feature flag (organizations.features, set by the admin command) must be on, falling back to the
// server default PARLEY_RESPONSES_ENABLED, which is on when a chat model is configured.
import type { Sql } from '../store/db.js';
import { featureFlag, setFeatureFlag } from '../store/features.js';

/** Key of the flag in `organizations.features`. */
export const RESPONSES_FEATURE = 'responses';

export interface GateSettings {
  PARLEY_LLM_BASE_URL?: string | undefined;
  PARLEY_LLM_MODEL?: string | undefined;
  PARLEY_RESPONSES_ENABLED?: boolean | undefined;
}

export type Gate = { open: true } | { open: false; message: string };

/** Fixed messages, built once. */
const NO_MODEL =
  'The responses API is not enabled: it needs a chat model. Set PARLEY_LLM_BASE_URL and PARLEY_LLM_MODEL ' +
  '(and PARLEY_LLM_API_KEY when the model needs one) to an OpenAI-compatible chat-completions server and restart.';
const NOT_ENABLED =
  `The responses API is not enabled for this workspace. An operator enables it with the admin command ` +
  `(workspace feature '${RESPONSES_FEATURE}'), or for every workspace with PARLEY_RESPONSES_ENABLED=1.`;

/** The decision from a workspace's flag (undefined when unset) and the settings. Pure. */
export function decideGate(flag: boolean | undefined, settings: GateSettings): Gate {
  if (!settings.PARLEY_LLM_BASE_URL || !settings.PARLEY_LLM_MODEL) return { open: false, message: NO_MODEL };
  const enabled = flag ?? settings.PARLEY_RESPONSES_ENABLED ?? true;
  return enabled ? { open: true } : { open: false, message: NOT_ENABLED };
}

/** Sets (true/false) or clears (null) the workspace's `responses` flag; false when there is no such workspace. */
export function setWorkspaceFlag(sql: Sql, orgId: string, enabled: boolean | null): Promise<boolean> {
  return setFeatureFlag(sql, orgId, RESPONSES_FEATURE, enabled);
}

/** The gate for the workspace: closed without a chat model, else as its flag (or the server default) says. */
export async function responsesGate(sql: Sql, orgId: string, settings: GateSettings): Promise<Gate> {
  const first = decideGate(undefined, { ...settings, PARLEY_RESPONSES_ENABLED: true });
  if (!first.open) return first;
  return decideGate(await featureFlag(sql, orgId, RESPONSES_FEATURE), settings);
}
