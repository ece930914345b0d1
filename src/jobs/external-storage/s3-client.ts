// A minimal S3 client for any S3-compatible server: PutObject and the multipart upload calls, signed with AWS
// Signature Version 4 (aws4fetch's signer, which runs on WebCrypto and hands the signed request to our own fetch),
// each request sent through the fetch it is given (the guarded client in production).
//
// The policy (endpoint, bucket, credentials) is read again before every request, so rotated credentials are used
// from the next request on, also in the middle of a multipart upload. Requests are retried in-process with backoff,
// a bounded number of times, when the answer may change (no answer, 5xx, 429); any other error answer is an S3Error
// at once (wrong credentials fail visibly, they are not retried).
import { createHash } from 'node:crypto';
import { AwsV4Signer } from 'aws4fetch';
import { objectUrl, type AddressingStyle } from './addressing.js';

/** Region signed for when the policy names none (what S3-compatible servers without regions accept). */
export const DEFAULT_REGION = 'us-east-1';
/** S3's minimum part size for every part but the last (Amazon S3 User Guide, "Multipart upload limits"). */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
export const MAX_PARTS = 10_000;
const DEFAULT_MAX_RETRIES = 3;
const DEFAULT_BASE_DELAY_MS = 200;
const DEFAULT_MAX_DELAY_MS = 5_000;
const DEFAULT_TIMEOUT_MS = 60_000;
/** RFC 9110 15.5.20 / 15.6: worth another attempt; any other status will not change. */
const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);
const ERROR_BODY_EXCERPT = 300;

/** What a request needs of an external storage policy, read at the time of the request. */
export interface StoragePolicy {
  id: string;
  endpointUrl: string;
  bucket: string;
  region: string | null;
  keyPrefix: string | null;
  addressingStyle: AddressingStyle;
  accessKeyId: string;
  secretAccessKey: string;
}

/** Reads the policy's current state (throws when it is gone). */
export type PolicySource = () => Promise<StoragePolicy>;

/** An S3 request failed: the server's error code and message, or why there was no answer. */
export class S3Error extends Error {
  constructor(
    message: string,
    /** The S3 error code (`SignatureDoesNotMatch`, `NoSuchBucket`, ...), or `NetworkError` / `Timeout`. */
    readonly code: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'S3Error';
  }
}

export interface S3ClientOptions {
  policy: PolicySource;
  fetch: typeof fetch;
  maxRetries?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Per attempt. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

interface S3Request {
  method: 'PUT' | 'POST' | 'DELETE' | 'HEAD' | 'GET';
  /** Where, when pinned (a multipart upload stays at the bucket and key it started at). */
  bucket: string;
  endpointUrl: string;
  addressingStyle: AddressingStyle;
  key: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Uint8Array | string;
}

export interface S3Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** The text of the first `<name>` element of a small S3 XML answer, unescaped; null when absent. */
export function xmlValue(xml: string, name: string): string | null {
  const m = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(xml);
  if (!m) return null;
  return m[1]
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .replace(/&amp;/g, '&');
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function sha256Hex(body: Uint8Array | string): string {
  return createHash('sha256').update(body).digest('hex');
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface UploadedPart {
  partNumber: number;
  etag: string;
}

/** Where a multipart upload goes, fixed at its start. */
export interface UploadTarget {
  policyId: string;
  endpointUrl: string;
  bucket: string;
  addressingStyle: AddressingStyle;
  key: string;
}

export class S3Client {
  private readonly maxRetries: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly timeoutMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;

  constructor(private readonly opts: S3ClientOptions) {
    this.maxRetries = opts.maxRetries ?? DEFAULT_MAX_RETRIES;
    this.baseDelayMs = opts.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    this.maxDelayMs = opts.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.sleep = opts.sleep ?? defaultSleep;
    this.random = opts.random ?? Math.random;
  }

  /** The object key under the policy's `key_prefix` (prepended as is), and where it goes now. */
  async target(key: string): Promise<UploadTarget> {
    const p = await this.opts.policy();
    return {
      policyId: p.id,
      endpointUrl: p.endpointUrl,
      bucket: p.bucket,
      addressingStyle: p.addressingStyle,
      key: `${p.keyPrefix ?? ''}${key}`,
    };
  }

  /** Uploads one object in a single request; returns its ETag. */
  async putObject(t: UploadTarget, body: Uint8Array | string, contentType: string): Promise<string> {
    const res = await this.send({ ...this.at(t), method: 'PUT', headers: { 'content-type': contentType }, body });
    return res.headers.get('etag') ?? '';
  }

  async createMultipartUpload(t: UploadTarget, contentType: string): Promise<string> {
    const res = await this.send({
      ...this.at(t),
      method: 'POST',
      query: { uploads: '' },
      headers: { 'content-type': contentType },
    });
    const uploadId = xmlValue(res.text, 'UploadId');
    if (!uploadId)
      throw new S3Error(
        `CreateMultipartUpload answered without an UploadId: ${res.text.slice(0, ERROR_BODY_EXCERPT)}`,
        'InvalidResponse',
        res.status,
      );
    return uploadId;
  }

  async uploadPart(t: UploadTarget, uploadId: string, partNumber: number, body: Uint8Array): Promise<UploadedPart> {
    if (partNumber < 1 || partNumber > MAX_PARTS)
      throw new RangeError(`part number ${partNumber} is outside 1..${MAX_PARTS}`);
    const res = await this.send({
      ...this.at(t),
      method: 'PUT',
      query: { partNumber: String(partNumber), uploadId },
      body,
    });
    const etag = res.headers.get('etag');
    if (!etag) throw new S3Error(`UploadPart ${partNumber} answered without an ETag`, 'InvalidResponse', res.status);
    return { partNumber, etag };
  }

  async completeMultipartUpload(t: UploadTarget, uploadId: string, parts: UploadedPart[]): Promise<string> {
    const sorted = [...parts].sort((a, b) => a.partNumber - b.partNumber);
    const body =
      '<CompleteMultipartUpload>' +
      sorted
        .map((p) => `<Part><PartNumber>${p.partNumber}</PartNumber><ETag>${xmlEscape(p.etag)}</ETag></Part>`)
        .join('') +
      '</CompleteMultipartUpload>';
    const res = await this.send({
      ...this.at(t),
      method: 'POST',
      query: { uploadId },
      headers: { 'content-type': 'application/xml' },
      body,
    });
    // S3 may answer 200 and still fail the completion, with an Error document in the body (S3 API Reference,
    // CompleteMultipartUpload).
    if (
      xmlValue(res.text, 'Error') !== null ||
      (xmlValue(res.text, 'Code') !== null && xmlValue(res.text, 'ETag') === null)
    ) {
      throw new S3Error(
        `CompleteMultipartUpload failed: ${xmlValue(res.text, 'Code')}: ${xmlValue(res.text, 'Message') ?? ''}`,
        xmlValue(res.text, 'Code') ?? 'InternalError',
        res.status,
      );
    }
    return xmlValue(res.text, 'ETag') ?? '';
  }

  async abortMultipartUpload(t: UploadTarget, uploadId: string): Promise<void> {
    await this.send({ ...this.at(t), method: 'DELETE', query: { uploadId } });
  }

  private at(t: UploadTarget): Pick<S3Request, 'bucket' | 'endpointUrl' | 'addressingStyle' | 'key'> {
    return { bucket: t.bucket, endpointUrl: t.endpointUrl, addressingStyle: t.addressingStyle, key: t.key };
  }

  /** Signs (with the policy's credentials of now) and sends a request, retrying what may change; 2xx or an S3Error. */
  async send(r: S3Request): Promise<S3Answer> {
    for (let attempt = 0; ; attempt++) {
      const result = await this.attempt(r);
      if (!(result instanceof S3Error)) return result;
      const retryable = result.status === null || RETRYABLE_STATUS.has(result.status);
      if (!retryable || attempt >= this.maxRetries || this.opts.signal?.aborted) throw result;
      // Exponential backoff with full jitter.
      await this.sleep(Math.floor(this.random() * Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** attempt)));
    }
  }

  private async attempt(r: S3Request): Promise<S3Answer | S3Error> {
    const policy = await this.opts.policy();
    const url = objectUrl(r.endpointUrl, r.bucket, r.key, r.addressingStyle);
    for (const [k, v] of Object.entries(r.query ?? {})) url.searchParams.set(k, v);
    const headers: Record<string, string> = { ...r.headers, 'x-amz-content-sha256': sha256Hex(r.body ?? '') };
    const signed = await new AwsV4Signer({
      method: r.method,
      url: url.toString(),
      headers,
      body: r.body,
      accessKeyId: policy.accessKeyId,
      secretAccessKey: policy.secretAccessKey,
      service: 's3',
      region: policy.region ?? DEFAULT_REGION,
    }).sign();
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = this.opts.signal ? AbortSignal.any([this.opts.signal, timeout]) : timeout;
    let res: Response;
    let text: string;
    try {
      res = await this.opts.fetch(signed.url.toString(), {
        method: r.method,
        headers: signed.headers,
        body: r.body,
        signal,
        redirect: 'manual',
      });
      text = await res.text();
    } catch (err) {
      if (this.opts.signal?.aborted) throw err;
      if (timeout.aborted)
        return new S3Error(`${r.method} ${url.host}: no answer within ${this.timeoutMs} ms`, 'Timeout', null);
      const cause = (err as { cause?: { message?: string } }).cause?.message;
      return new S3Error(
        `${r.method} ${url.host}: ${(err as Error).message}${cause ? `: ${cause}` : ''}`,
        'NetworkError',
        null,
      );
    }
    if (res.status >= 200 && res.status < 300) return { status: res.status, headers: res.headers, text };
    const code = xmlValue(text, 'Code') ?? `HTTP${res.status}`;
    const message = xmlValue(text, 'Message') ?? text.slice(0, ERROR_BODY_EXCERPT);
    return new S3Error(`${r.method} ${url.host}${url.pathname}: ${res.status} ${code}: ${message}`, code, res.status);
  }
}
