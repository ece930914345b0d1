// Every route plugin of the control plane. Add a resource = add a file and one line here (docs/CONTRACTS.md).
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppContext } from './context.js';
import { apiKeyRoutes } from './api-keys.js';
import { evalPromptRoutes } from './eval-prompts.js';
import { externalStoragePolicyRoutes } from './external-storage-policies.js';
import { extractionSchemaRoutes } from './extraction-schemas.js';
import { projectRoutes } from './projects.js';
import { conversationRoutes } from './conversations.js';
import { outboundCallRoutes } from './outbound-call.js';
import { recordingRoutes } from './recordings.js';
import { sessionTokenRoutes } from './session-tokens.js';
import { voiceRoutes } from './voices.js';
import { workspaceRoutes } from './workspace.js';
import { responsesRoutes } from './responses.js';
import { agentRoutes } from './agents.js';
import { toolRoutes } from './tools.js';
import { phoneNumberRoutes } from './phone-numbers.js';
import { webhookRoutes } from './webhooks.js';

export type ApiApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;
export type RoutePlugin = (app: ApiApp, ctx: AppContext) => Promise<void>;

export const routePlugins: RoutePlugin[] = [
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
