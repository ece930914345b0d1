// Delivering one conversation's artifacts to its agent's external storage policy without keeping them: the stereo
// recording streams into a multipart upload while the call runs (WavMultipartSink), and the record, as JSON built
// from what the live conversation holds in memory, is uploaded when it ends. Both happen in the process that runs
// the call, with bounded in-process retries (S3Client): a durable job cannot carry them, since its payload would be
// the very content zero data retention forbids keeping. Only each artifact's outcome (where, how big, delivered or
// why not) is recorded on the conversation. See docs/external-storage.md.
import type { Logger } from '../../log.js';
import {
  getStoragePolicy,
  type StorageArtifact,
  type StorageOutcome,
  type StoragePolicyRow,
} from '../../store/external-storage.js';
import type { Sql } from '../../store/db.js';
import { type S3Client, S3Error, type PolicySource, type StoragePolicy, type UploadTarget } from './s3-client.js';
import { WavMultipartSink } from './wav-multipart-sink.js';

/** Object names under `{key_prefix}{conversation id}/`. */
export const ARTIFACT_OBJECTS: Record<StorageArtifact, string> = {
  record: 'conversation.json',
  recording: 'recording.wav',
};
export const RECORD_CONTENT_TYPE = 'application/json';

/** The key of an artifact before the policy's prefix: `{conversation id}/{object name}`. */
export function artifactKey(conversationId: string, artifact: StorageArtifact): string {
  return `${conversationId}/${ARTIFACT_OBJECTS[artifact]}`;
}

export function storagePolicyFromRow(r: StoragePolicyRow): StoragePolicy {
  return {
    id: r.id,
    endpointUrl: r.endpoint_url,
    bucket: r.bucket,
    region: r.region,
    keyPrefix: r.key_prefix,
    addressingStyle: r.addressing_style,
    accessKeyId: r.access_key_id,
    secretAccessKey: r.secret_access_key,
  };
}

/** Reads the policy `id` from the database at every call (for code on main; a media worker asks main instead). */
export function policyFromStore(sql: Sql, id: string): PolicySource {
  return async () => {
    const row = await getStoragePolicy(sql, id);
    if (!row) throw new S3Error(`external storage policy ${id} was deleted`, 'PolicyDeleted', null);
    return storagePolicyFromRow(row);
  };
}

/** Records an artifact's outcome (on main: src/store/external-storage.ts recordStorageOutcome). */
export type OutcomeRecorder = (o: StorageOutcome) => Promise<unknown>;

/** The record to upload, or what builds it (a failure to build it is the record's failed outcome). */
export type RecordSource = { readonly build: () => Promise<unknown> } | { readonly value: unknown };

export interface ExternalStorageDeliveryOptions {
  conversationId: string;
  /** The policy the agent names, resolved when the conversation started. */
  policyId: string;
  client: S3Client;
  /** The recording's rate (the engine's, as src/media/recording.ts records at); null: no recording is streamed. */
  sampleRate: number | null;
  partSize?: number;
  log: Logger;
  now?: () => Date;
}

export class ExternalStorageDelivery {
  private constructor(
    private readonly opts: ExternalStorageDeliveryOptions,
    /** The streaming recording, or null when none is made (or its upload could not start). */
    readonly recording: WavMultipartSink | null,
    private readonly recordingTarget: UploadTarget | null,
    private readonly startError: Error | null,
  ) {}

  /**
   * Starts a conversation's delivery: reads the policy for where the recording goes and opens its sink. Never
   * throws: a policy that cannot be read is reported as the recording's outcome at finish().
   */
  static async start(opts: ExternalStorageDeliveryOptions): Promise<ExternalStorageDelivery> {
    if (opts.sampleRate === null) return new ExternalStorageDelivery(opts, null, null, null);
    try {
      const target = await opts.client.target(artifactKey(opts.conversationId, 'recording'));
      const sink = new WavMultipartSink(opts.client, target, {
        sampleRate: opts.sampleRate,
        partSize: opts.partSize,
        log: opts.log,
      });
      return new ExternalStorageDelivery(opts, sink, target, null);
    } catch (err) {
      opts.log.error(
        { err, conversationId: opts.conversationId },
        'external storage: the recording cannot be streamed',
      );
      return new ExternalStorageDelivery(opts, null, null, err as Error);
    }
  }

  /**
   * The call ended: completes the recording's upload, uploads the record (JSON, from memory) and records each
   * artifact's outcome with `recordOutcome`. Resolves with the outcomes; never throws for an upload that failed
   * (that is an outcome), only when recording an outcome does.
   */
  async finish(record: RecordSource, recordOutcome: OutcomeRecorder): Promise<StorageOutcome[]> {
    const outcomes: StorageOutcome[] = [];
    if (this.recording && this.recordingTarget) {
      const t = this.recordingTarget;
      try {
        const r = await this.recording.finish();
        outcomes.push(this.outcome('recording', t, { status: 'delivered', bytes: r.bytes, error: null }));
      } catch (err) {
        outcomes.push(this.outcome('recording', t, { status: 'failed', bytes: null, error: (err as Error).message }));
      }
    } else if (this.startError) {
      outcomes.push(this.outcome('recording', null, { status: 'failed', bytes: null, error: this.startError.message }));
    }
    outcomes.push(await this.deliverRecord(record));
    for (const o of outcomes) {
      if (o.status === 'failed')
        this.opts.log.error(
          { conversationId: o.conversation_id, artifact: o.artifact, key: o.object_key, error: o.error },
          'external storage: an artifact was not delivered',
        );
      await recordOutcome(o);
    }
    return outcomes;
  }

  /** The conversation will not be delivered after all (it failed to start): the recording upload is aborted. */
  async abandon(): Promise<void> {
    await this.recording?.abort();
  }

  private async deliverRecord(record: RecordSource): Promise<StorageOutcome> {
    let target: UploadTarget | null = null;
    try {
      target = await this.opts.client.target(artifactKey(this.opts.conversationId, 'record'));
      const value: unknown = 'build' in record ? await record.build() : record.value;
      const body = Buffer.from(JSON.stringify(value), 'utf8');
      await this.opts.client.putObject(target, body, RECORD_CONTENT_TYPE);
      return this.outcome('record', target, { status: 'delivered', bytes: body.length, error: null });
    } catch (err) {
      return this.outcome('record', target, { status: 'failed', bytes: null, error: (err as Error).message });
    }
  }

  private outcome(
    artifact: StorageArtifact,
    t: UploadTarget | null,
    r: Pick<StorageOutcome, 'status' | 'bytes' | 'error'>,
  ): StorageOutcome {
    return {
      conversation_id: this.opts.conversationId,
      artifact,
      policy_id: t?.policyId ?? this.opts.policyId,
      bucket: t?.bucket ?? '',
      object_key: t?.key ?? artifactKey(this.opts.conversationId, artifact),
      ...r,
      finished_at: (this.opts.now ?? (() => new Date()))(),
    };
  }
}
