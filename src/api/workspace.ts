// The caller's workspace: GET and PATCH /v1/workspace. API keys only.
import { getWorkspace, updateWorkspace } from '../domain/workspaces.js';
import { successBody } from '../schemas/common.js';
import { updateWorkspaceBody, workspaceBody } from '../schemas/workspace.js';
import { requireApiKey } from './auth-hook.js';
import type { RoutePlugin } from './types.js';

export const workspaceRoutes: RoutePlugin = async (app, { sql, credentials }) => {
  app.get('/workspace', { schema: { tags: ['workspace'], response: { 200: workspaceBody } } }, async (req) => {
    requireApiKey(req.auth, 'read the workspace');
    return { workspace: await getWorkspace(sql, req.auth.orgId) };
  });

  app.patch(
    '/workspace',
    { schema: { tags: ['workspace'], body: updateWorkspaceBody, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'update the workspace');
      await updateWorkspace(sql, credentials, req.auth.orgId, req.body);
      return { success: true };
    },
  );
};
