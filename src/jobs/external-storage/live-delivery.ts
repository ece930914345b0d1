// External storage as a media worker runs it (docs/external-storage.md, "How it is wired"): the conversation's
// policy asked of main at its start by the agent's policy name, then by id before every request (rotated credentials
// apply at once); the recording streamed into the bucket through the delivery's sink; the record built at the end
// from the stored record and the live record's memory (./record-json.ts); each outcome sent to main to be recorded
// on the conversation. main answers only the worker that owns the conversation.
import type { ArtifactDelivery, ExternalStorage, RecordContent } from '../../conversation/host.js';
import type { Logger } from '../../log.js';
import type { Conversation } from '../../schemas/conversations.js';
import type { StorageOutcome, StoragePolicyRef } from '../../store/external-storage.js';
import { ExternalStorageDelivery } from './delivery.js';
import { recordWithContent } from './record-json.js';
import { S3Client, S3Error, type S3ClientOptions, type StoragePolicy } from './s3-client.js';

/** What the delivery asks of main (src/workers/main-client.ts storageChannel). */
export interface StorageChannel {
  /** The policy `ref` names in the conversation's project, credentials included; null when there is none. */
  policy(conversationId: string, ref: StoragePolicyRef): Promise<StoragePolicy | null>;
  /** Records an artifact's outcome on the conversation. */
  outcome(outcome: StorageOutcome): Promise<{ recorded: boolean }>;
  /** The conversation's record as the store holds it (without content under zero data retention). */
  storedRecord(conversationId: string): Promise<Conversation | null>;
}

export interface LiveExternalStorageOptions {
  channel: StorageChannel;
  /** Outbound HTTP to the buckets (the guarded client in production). */
  fetch: typeof fetch;
  log: Logger;
  /** Bytes per multipart part (S3's minimum by default). */
  partSize?: number;
  /** The S3 client's retries and timeouts. */
  client?: Omit<S3ClientOptions, 'policy' | 'fetch'>;
}

/** Starts the deliveries of a worker's conversations. */
export function liveExternalStorage(o: LiveExternalStorageOptions): ExternalStorage {
  const { channel, log } = o;
  return {
    async start(conversationId: string, policyName: string, sampleRate: number): Promise<ArtifactDelivery> {
      // The delivery's own lines name the conversation already.
      const clog = log.child({ externalStoragePolicy: policyName });
      // The policy's id, once the name is resolved; until then (and when it cannot be) every read fails with why.
      let policyId = '';
      let unresolved: Error | null = null;
      try {
        const p = await channel.policy(conversationId, { name: policyName });
        if (p) policyId = p.id;
        else
          unresolved = new S3Error(
            `no external storage policy named '${policyName}' in the conversation's project`,
            'NoSuchPolicy',
            null,
          );
      } catch (err) {
        unresolved = new S3Error(
          `the external storage policy could not be read: ${(err as Error).message}`,
          'PolicyUnavailable',
          null,
        );
      }
      const client = new S3Client({
        ...o.client,
        fetch: o.fetch,
        policy: async () => {
          if (unresolved) throw unresolved;
          const p = await channel.policy(conversationId, { id: policyId });
          if (!p) throw new S3Error(`external storage policy ${policyId} was deleted`, 'PolicyDeleted', null);
          return p;
        },
      });
      const delivery = await ExternalStorageDelivery.start({
        conversationId,
        policyId,
        client,
        sampleRate,
        partSize: o.partSize,
        log: clog,
      });
      return {
        recording: delivery.recording,
        async finish(content: RecordContent): Promise<void> {
          const record = async () => {
            const stored = await channel.storedRecord(conversationId);
            if (!stored) throw new Error('the conversation no longer exists');
            return recordWithContent(stored, content);
          };
          try {
            await delivery.finish({ build: record }, async (outcome) => {
              const { recorded } = await channel.outcome(outcome);
              if (!recorded)
                clog.warn(
                  { conversationId, artifact: outcome.artifact, status: outcome.status },
                  'external storage: the outcome was not recorded (the conversation is gone)',
                );
            });
          } catch (err) {
            clog.error({ err, conversationId }, 'external storage: recording an outcome failed');
          }
        },
      };
    },
  };
}
