// API keys: create, list, update, delete and rotate of /v1/api_keys. Secrets appear only in the
// create and rotate answers.
import { z } from 'zod';

export const apiKeyName = z.string().trim().min(1).max(100);

export const apiKeyRecord = z.object({
  id: z.string(),
  name: z.string(),
  /** The last four characters of the secret, to tell keys apart. */
  key_hint: z.string(),
  created_at: z.string(),
  rotated_at: z.string().nullable(),
});

/** Create and rotate answer: the only place the secret appears. */
export const apiKeySecretBody = z.object({ id: z.string(), name: z.string(), api_key: z.string() });
export const apiKeysBody = z.object({ api_keys: z.array(apiKeyRecord) });
export const createApiKeyBody = z.object({ name: apiKeyName }).strict();
export const updateApiKeyBody = z.object({ name: apiKeyName }).strict();
export const apiKeyParams = z.object({ id: z.string().min(1).max(200) });
