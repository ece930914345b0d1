// External storage policies (/v1/external_storage_policies): where recordings go under zero data retention.
import { z } from 'zod';
import { httpsPublicUrl, snakeCaseName, type UrlRules } from './common.js';

export const ADDRESSING_STYLES = ['auto', 'virtual', 'path'] as const;

/** S3 bucket names: 3-63 lowercase letters, digits, dots and hyphens, starting and ending alphanumeric. */
const bucket = z
  .string()
  .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name (3-63 lowercase letters, digits, . and -)');
const region = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9-]+$/, 'must be a region name such as us-east-1')
  .nullable();
const keyPrefix = z.string().max(1024).nullable();
const credential = z.string().min(1).max(1024);

/** Schemas depend on PARLEY_ALLOW_PRIVATE_ENDPOINTS through the endpoint URL rule. */
export function externalStoragePolicySchemas(rules: UrlRules) {
  const endpointUrl = httpsPublicUrl(rules);
  const create = z
    .object({
      name: snakeCaseName,
      endpoint_url: endpointUrl,
      bucket,
      region: region.default(null),
      key_prefix: keyPrefix.default(null),
      addressing_style: z.enum(ADDRESSING_STYLES).default('auto'),
      access_key_id: credential,
      secret_access_key: credential,
    })
    .strict();
  const update = z
    .object({
      name: snakeCaseName.optional(),
      endpoint_url: endpointUrl.optional(),
      bucket: bucket.optional(),
      region: region.optional(),
      key_prefix: keyPrefix.optional(),
      addressing_style: z.enum(ADDRESSING_STYLES).optional(),
      access_key_id: credential.optional(),
      secret_access_key: credential.optional(),
    })
    .strict()
    .superRefine((b, ctx) => {
      // Credentials rotate only when both are given.
      const one = (b.access_key_id === undefined) !== (b.secret_access_key === undefined);
      if (one) {
        const missing = b.access_key_id === undefined ? 'access_key_id' : 'secret_access_key';
        ctx.addIssue({
          code: 'custom',
          path: [missing],
          message: 'access_key_id and secret_access_key must be supplied together',
        });
      }
    });
  return { create, update };
}

/** The record as read back; the secret access key is never returned. */
export const externalStoragePolicy = z.object({
  id: z.string(),
  name: z.string(),
  endpoint_url: z.string(),
  bucket: z.string(),
  region: z.string().nullable(),
  key_prefix: z.string().nullable(),
  addressing_style: z.enum(ADDRESSING_STYLES),
  access_key_id: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export const externalStoragePolicyBody = z.object({ external_storage_policy: externalStoragePolicy });
export const externalStoragePoliciesBody = z.object({ external_storage_policies: z.array(externalStoragePolicy) });
export const createdExternalStoragePolicyBody = z.object({ id: z.string(), name: z.string() });
