// Project record and requests: list, get, create, update and delete of /v1/projects.
import { z } from 'zod';

/** Project names: lowercase slug, 1-64 characters (`main` is every workspace's first project). */
export const projectName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9][a-z0-9_-]*$/, 'must be lowercase letters, digits, - and _, starting with a letter or digit')
  .refine((v) => !v.startsWith('proj_'), 'must not start with proj_ (reserved for project ids)');

export const project = z.object({
  id: z.string(),
  name: z.string(),
  default_agent: z.object({ id: z.string(), name: z.string() }).nullable(),
  active_conversations: z.number().int().describe('conversations in progress now'),
  max_active_conversations: z
    .number()
    .int()
    .nullable()
    .describe('concurrent-conversation cap of the project; null means the workspace limit applies'),
});
export type Project = z.infer<typeof project>;

const maxActive = z.number().int().min(0).max(1_000_000).nullable();
/** An agent name or id of the project, or null to clear. */
const defaultAgent = z.string().min(1).max(200).nullable();

export const createProjectBody = z
  .object({
    name: projectName,
    max_active_conversations: maxActive.optional(),
  })
  .strict();

export const updateProjectBody = z
  .object({
    name: projectName.optional(),
    max_active_conversations: maxActive.optional(),
    default_agent: defaultAgent.optional(),
  })
  .strict();

export const projectParams = z.object({ nameOrId: z.string().min(1).max(200) });
export const projectBody = z.object({ project });
export const projectsBody = z.object({ projects: z.array(project) });
export const createdProjectBody = z.object({ id: z.string(), name: z.string() });
