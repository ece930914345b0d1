// Extraction schemas: the record, and the create, list, get, update and delete requests of /v1/extraction_schemas.
import { z } from 'zod';

export const EXTRACTION_FIELD_TYPES = [
  'string',
  'int',
  'float',
  'bool',
  'string[]',
  'int[]',
  'float[]',
  'bool[]',
] as const;
/** Fields of one schema (Parley's bound). */
export const EXTRACTION_MAX_FIELDS = 100;

export const extractionField = z
  .object({
    name: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be letters, digits and _, not starting with a digit'),
    type: z.enum(EXTRACTION_FIELD_TYPES),
    // description: a string or null, and the property must be present.
    description: z.string().max(2000).nullable(),
  })
  .strict();

const fields = z
  .array(extractionField)
  .min(1)
  .max(EXTRACTION_MAX_FIELDS)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((f, i) => {
      if (seen.has(f.name))
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate field name '${f.name}'` });
      seen.add(f.name);
    });
  });

export const extractionSchemaName = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .refine((v) => !v.startsWith('conv_extract_schema_'), 'must not start with conv_extract_schema_ (reserved for ids)');

export const createExtractionSchemaBody = z
  .object({ name: extractionSchemaName, prompt: z.string().min(1).max(100_000), fields })
  .strict();
export const updateExtractionSchemaBody = z
  .object({
    name: extractionSchemaName.optional(),
    prompt: z.string().min(1).max(100_000).optional(),
    fields: fields.optional(),
  })
  .strict();

export const extractionSchema = z.object({
  id: z.string(),
  name: z.string(),
  prompt: z.string(),
  fields: z.array(
    z.object({ name: z.string(), type: z.enum(EXTRACTION_FIELD_TYPES), description: z.string().nullable() }),
  ),
});
export type ExtractionSchema = z.infer<typeof extractionSchema>;
export const extractionSchemaBody = z.object({ extraction_schema: extractionSchema });
export const extractionSchemasBody = z.object({ extraction_schemas: z.array(extractionSchema) });
export const createdExtractionSchemaBody = z.object({ id: z.string(), name: z.string() });
export const nameOrIdParams = z.object({ nameOrId: z.string().min(1).max(200) });
