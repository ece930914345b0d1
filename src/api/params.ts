// Query and path parameters every resource shares: the `project` query (a name or id) and name-or-id addressing.
import { z } from 'zod';

/** The `project` query parameter: a project name (default `main`) or id. */
export const projectQuery = z.object({
  project: z
    .string()
    .min(1)
    .max(200)
    .default('main')
    .describe('project name or id; applies when a resource is addressed by name'),
});

/** A resource named in the path by name or id. */
export const nameOrIdParams = z.object({ nameOrId: z.string().min(1).max(200) });
