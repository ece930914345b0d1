// A real S3-compatible server for the external storage tests: s3rver (the S3 REST API on disk) behind a front that
// checks every request's AWS Signature V4 with the AWS SDK's own signer (@smithy/signature-v4), since s3rver checks
// only the access key id of a V4 request. The front answers S3's error documents (InvalidAccessKeyId,
// SignatureDoesNotMatch, XAmzContentSHA256Mismatch) as S3 does, and passes good requests on with their Host header,
// so s3rver sees virtual-hosted requests as such (`<bucket>.s3.localhost`). Plus a fetch that resolves every
// `*.localhost` name to 127.0.0.1 (the resolver trick that lets virtual-hosted style run on one machine) and records
// what it sent.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo, LookupFunction } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignatureV4 } from '@smithy/signature-v4';
import { Hash } from '@smithy/hash-node';
import { HttpRequest } from '@smithy/protocol-http';

const require = createRequire(import.meta.url);

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
interface S3rverAccount {
  createKeyPair(accessKeyId: string, secretAccessKey: string): void;
  revokeAccessKey(accessKeyId: string): void;
}
const S3rver = require('s3rver') as new (opts: Record<string, unknown>) => S3rverInstance;
const { DUMMY_ACCOUNT } = require('s3rver/lib/models/account.js') as { DUMMY_ACCOUNT: S3rverAccount };

export interface SentRequest {
  method: string;
  url: string;
  host: string;
  accessKeyId: string | null;
}

export interface S3Peer {
  /** The endpoint by IP (path style under `auto`). */
  ipEndpoint: string;
  /** The endpoint by name: `http://s3.localhost:<port>`; buckets as `<bucket>.s3.localhost`. */
  nameEndpoint: string;
  bucket: string;
  addKey(accessKeyId: string, secretAccessKey: string): void;
  revokeKey(accessKeyId: string): void;
  /** Reads an object straight from s3rver (no credentials needed there): status, bytes and headers. */
  getObject(key: string): Promise<{ status: number; bytes: Buffer; contentType: string | null }>;
  close(): Promise<void>;
}

function s3ErrorXml(code: string, message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
}

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/;

/** Recomputes a request's signature with the AWS SDK's signer; null when it matches, else S3's error code. */
async function checkSignature(
  method: string,
  rawUrl: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
  keys: Map<string, string>,
): Promise<[number, string, string] | null> {
  const m = AUTHORIZATION.exec(String(headers.authorization ?? ''));
  if (!m) return [403, 'AccessDenied', 'no AWS4-HMAC-SHA256 authorization'];
  const [, accessKeyId, , region, signedHeaders, signature] = m;
  const secret = keys.get(accessKeyId!);
  if (secret === undefined)
    return [403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.'];
  const contentSha = String(headers['x-amz-content-sha256'] ?? '');
  if (contentSha !== 'UNSIGNED-PAYLOAD' && contentSha !== createHash('sha256').update(body).digest('hex')) {
    return [
      400,
      'XAmzContentSHA256Mismatch',
      "The provided 'x-amz-content-sha256' header does not match what was computed.",
    ];
  }
  const url = new URL(rawUrl, `http://${headers.host}`);
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const signed: Record<string, string> = {};
  for (const h of signedHeaders!.split(';')) signed[h] = String(headers[h] ?? '');
  const amzDate = String(headers['x-amz-date'] ?? '');
  const signingDate = new Date(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
  );
  const signer = new SignatureV4({
    service: 's3',
    region: region!,
    credentials: { accessKeyId: accessKeyId!, secretAccessKey: secret },
    sha256: Hash.bind(null, 'sha256'),
    uriEscapePath: false,
    applyChecksum: false,
  });
  const req = new HttpRequest({
    method,
    protocol: 'http:',
    hostname: url.hostname,
    port: Number(url.port),
    path: url.pathname,
    query,
    headers: signed,
    body,
  });
  const expected = await signer.sign(req, { signingDate });
  const want = /Signature=([0-9a-f]{64})/.exec(String(expected.headers.authorization))?.[1];
  if (want !== signature)
    return [
      403,
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided.',
    ];
  return null;
}

export async function startS3Peer(bucket = 'parley-artifacts'): Promise<S3Peer> {
  const directory = mkdtempSync(join(tmpdir(), 'parley-s3rver-'));
  const s3rver = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
    serviceEndpoint: 'localhost',
  });
  const backend = await s3rver.run();
  const keys = new Map<string, string>();

  const front: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      void checkSignature(req.method ?? 'GET', req.url ?? '/', req.headers, body, keys).then((problem) => {
        if (problem) {
          res.writeHead(problem[0], { 'content-type': 'application/xml' });
          return void res.end(s3ErrorXml(problem[1], problem[2]));
        }
        const forward = request(
          {
            host: '127.0.0.1',
            port: backend.port,
            method: req.method,
            path: req.url,
            headers: { ...req.headers, 'content-length': String(body.length) },
          },
          (up) => {
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
          },
        );
        forward.on('error', (err) => {
          res.writeHead(502);
          res.end(err.message);
        });
        forward.end(body);
      });
    });
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  const port = (front.address() as AddressInfo).port;

  return {
    ipEndpoint: `http://127.0.0.1:${port}`,
    nameEndpoint: `http://s3.localhost:${port}`,
    bucket,
    addKey(id, secret) {
      keys.set(id, secret);
      DUMMY_ACCOUNT.createKeyPair(id, secret);
    },
    revokeKey(id) {
      keys.delete(id);
      DUMMY_ACCOUNT.revokeAccessKey(id);
    },
    async getObject(key) {
      const res = await fetch(`http://127.0.0.1:${backend.port}/${bucket}/${key}`);
      return {
        status: res.status,
        bytes: Buffer.from(await res.arrayBuffer()),
        contentType: res.headers.get('content-type'),
      };
    },
    async close() {
      front.closeAllConnections();
      await new Promise<void>((resolve) => front.close(() => resolve()));
      await s3rver.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** Resolves any name to 127.0.0.1 (single or `all` form of the lookup callback). */
const toLoopback = ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
  if (opts?.all) cb(null, [{ address: '127.0.0.1', family: 4 }]);
  else cb(null, '127.0.0.1', 4);
}) as unknown as LookupFunction;

/**
 * A fetch for tests: HTTP to 127.0.0.1 or any `*.localhost` name (resolved to 127.0.0.1, keeping the Host header
 * the URL names), recording each request; any other host is refused.
 */
export function loopbackFetch(sent: SentRequest[] = []): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost' && !url.hostname.endsWith('.localhost')) {
      throw new TypeError('fetch failed', { cause: new Error(`not a loopback host: ${url.hostname}`) });
    }
    const body = req.body ? Buffer.from(await req.arrayBuffer()) : null;
    const auth = req.headers.get('authorization');
    sent.push({
      method: req.method,
      url: req.url,
      host: url.host,
      accessKeyId: auth ? (/Credential=([^/]+)/.exec(auth)?.[1] ?? null) : null,
    });
    const headers: Record<string, string> = Object.fromEntries(req.headers);
    if (body) headers['content-length'] = String(body.length);
    return new Promise<Response>((resolve, reject) => {
      const r = request(
        {
          host: url.hostname,
          port: Number(url.port || 80),
          method: req.method,
          path: url.pathname + url.search,
          headers,
          lookup: toLoopback,
          signal: init?.signal ?? undefined,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const h = new Headers();
            for (const [k, v] of Object.entries(res.headers))
              if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
            const status = res.statusCode ?? 502;
            const noBody = status === 204 || status === 304 || req.method === 'HEAD';
            resolve(new Response(noBody ? null : Buffer.concat(chunks), { status, headers: h }));
          });
        },
      );
      r.on('error', (err) => reject(new TypeError('fetch failed', { cause: err })));
      r.end(body ?? undefined);
    });
  }) as typeof fetch;
}
