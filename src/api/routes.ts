// Every route plugin of the control plane: add a resource = add a file and one line here. The `/v1` plugins run
// in the authenticated `/v1` scope (paths relative to it); the root ones serve what lives outside it.
import { apiKeyRoutes } from './api-keys.js';
import { docsRoutes } from './docs.js';
import { evalPromptRoutes } from './eval-prompts.js';
import { externalStoragePolicyRoutes } from './external-storage-policies.js';
import { extractionSchemaRoutes } from './extraction-schemas.js';
import { healthRoutes } from './health.js';
import { openApiRoutes } from './openapi.js';
import { projectRoutes } from './projects.js';
import { conversationRoutes } from './conversations.js';
import { outboundCallRoutes } from './outbound-call.js';
import { recordingRoutes } from './recordings.js';
import { sessionTokenRoutes } from './session-tokens.js';
import { voiceRoutes, voiceSampleRoutes } from './voices.js';
import { workspaceRoutes } from './workspace.js';
import { responsesRoutes } from './responses.js';
import { agentRoutes } from './agents.js';
import { toolRoutes } from './tools.js';
import { phoneNumberRoutes } from './phone-numbers.js';
import type { RoutePlugin } from './types.js';
import { webhookRoutes } from './webhooks.js';

/** Routes under `/v1`, behind the auth hook (those with `config.public` skip it). */
export const v1RoutePlugins: RoutePlugin[] = [
  openApiRoutes,
  projectRoutes,
  conversationRoutes,
  outboundCallRoutes,
  recordingRoutes,
  apiKeyRoutes,
  sessionTokenRoutes,
  workspaceRoutes,
  evalPromptRoutes,
  extractionSchemaRoutes,
  externalStoragePolicyRoutes,
  voiceRoutes,
  responsesRoutes,
  agentRoutes,
  toolRoutes,
  phoneNumberRoutes,
  webhookRoutes,
];

/**
 * Routes outside `/v1`: the reference page, signed voice samples (the signature is the credential), the probes and
 * the metrics (their own token).
 */
export const rootRoutePlugins: RoutePlugin[] = [docsRoutes, voiceSampleRoutes, healthRoutes];
