// The caller's workspace: GET and PATCH /v1/workspace (spec endpoint 10). API keys only.
import { requireApiKey } from '../auth/hook.js';
import { successBody } from '../schemas/common.js';
import { updateWorkspaceBody, workspaceBody } from '../schemas/workspace.js';
import { notFound } from './errors.js';
import type { RoutePlugin } from './routes.js';

interface OrgRow {
  id: string;
  name: string;
  logo_url: string | null;
  invite_link_allowed_domains: string[];
  ip_allowlist: string[];
  features: Record<string, boolean>;
  created_at: Date;
}

export const workspaceRoutes: RoutePlugin = async (app, { sql, credentials }) => {
  app.get('/v1/workspace', { schema: { tags: ['workspace'], response: { 200: workspaceBody } } }, async (req) => {
    requireApiKey(req.auth, 'read the workspace');
    const [row] = await sql<OrgRow[]>`select * from organizations where id = ${req.auth.orgId}`;
    if (!row) throw notFound('workspace');
    return { workspace: { ...row, created_at: row.created_at.toISOString() } };
  });

  app.patch(
    '/v1/workspace',
    { schema: { tags: ['workspace'], body: updateWorkspaceBody, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'update the workspace');
      const b = req.body;
      // Only what is sent changes; `ip_allowlist` is enforced from the next request on.
      await sql`update organizations set
        logo_url = ${b.logo_url === undefined ? sql`logo_url` : b.logo_url},
        invite_link_allowed_domains = ${
          b.invite_link_allowed_domains === undefined
            ? sql`invite_link_allowed_domains`
            : sql.json(b.invite_link_allowed_domains.map((d) => d.toLowerCase()))
        },
        ip_allowlist = ${b.ip_allowlist === undefined ? sql`ip_allowlist` : sql.json(b.ip_allowlist)}
        where id = ${req.auth.orgId}`;
      if (b.ip_allowlist !== undefined) credentials.forgetWorkspace(req.auth.orgId);
      return { success: true };
    },
  );
};
