// Workspace (organization) read and update: GET and PATCH /v1/workspace, and the fields an update may change.
import { z } from 'zod';
import { addressEntryProblem } from '../auth/addresses.js';

/** `logo_url`: an https URL ending `.png` or `.svg`, or null to clear. */
export const logoUrl = z
  .string()
  .max(2048)
  .refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'https:' && /\.(png|svg)$/i.test(u.pathname) && !u.username && !u.password;
    } catch {
      return false;
    }
  }, 'must be an https URL ending .png or .svg')
  .nullable();

/** An e-mail domain (RFC 1035 labels, at least two). */
export const emailDomain = z
  .string()
  .max(253)
  .regex(
    /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i,
    'must be an e-mail domain such as example.com',
  );

export const ipAllowlistEntry = z.string().superRefine((v, ctx) => {
  const problem = addressEntryProblem(v);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** Entries of one allowlist (Parley's bound). */
export const IP_ALLOWLIST_MAX = 1000;

export const updateWorkspaceBody = z
  .object({
    logo_url: logoUrl.optional(),
    invite_link_allowed_domains: z.array(emailDomain).max(100).optional(),
    ip_allowlist: z.array(ipAllowlistEntry).max(IP_ALLOWLIST_MAX).optional(),
  })
  .strict();

export const workspace = z.object({
  id: z.string(),
  name: z.string(),
  logo_url: z.string().nullable(),
  invite_link_allowed_domains: z.array(z.string()),
  ip_allowlist: z.array(z.string()),
  features: z.record(z.string(), z.boolean()),
  created_at: z.string(),
});
export const workspaceBody = z.object({ workspace });
