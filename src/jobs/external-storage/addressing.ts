// Where an S3 request goes: path style (`https://endpoint/bucket/key`) or virtual-hosted style
// (`https://bucket.endpoint/key`), per the policy's `addressing_style`.
//
// `auto` picks path style when the endpoint is an IP literal (a bucket cannot be a subdomain of an address), when it
// names an explicit port and is not an AWS host (self-hosted servers on a port, like MinIO or Ceph, rarely have
// wildcard DNS), or when the bucket name has a dot and the endpoint is HTTPS (a wildcard certificate matches one
// label, so `my.bucket.host` would fail TLS); virtual-hosted style otherwise (AWS's default, and what providers
// without path style, like newer AWS buckets, need).
import { isIP } from 'node:net';

export type AddressingStyle = 'auto' | 'virtual' | 'path';

/** A host of AWS S3 itself (`s3.amazonaws.com`, `s3.eu-west-1.amazonaws.com`, `.amazonaws.com.cn`). */
const AWS_HOST = /(^|\.)amazonaws\.com(\.cn)?$/i;

/** The style `auto` resolves to for this endpoint and bucket (see the file's comment). */
export function resolveAddressingStyle(style: AddressingStyle, endpoint: URL, bucket: string): 'virtual' | 'path' {
  if (style !== 'auto') return style;
  const host = endpoint.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0) return 'path';
  if (endpoint.port !== '' && !AWS_HOST.test(host)) return 'path';
  if (bucket.includes('.') && endpoint.protocol === 'https:') return 'path';
  return 'virtual';
}

/** RFC 3986 2.3: everything but unreserved characters percent-encoded, segment by segment (`/` kept). */
export function encodeKey(key: string): string {
  return key
    .split('/')
    .map((segment) =>
      encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
    )
    .join('/');
}

/** The URL of an object (or, with key '', of the bucket) at `endpoint` in the given style. */
export function objectUrl(endpoint: string, bucket: string, key: string, style: AddressingStyle): URL {
  const base = new URL(endpoint);
  const basePath = base.pathname.replace(/\/+$/, '');
  const resolved = resolveAddressingStyle(style, base, bucket);
  const url = new URL(base.origin);
  if (resolved === 'virtual') {
    url.hostname = `${bucket}.${base.hostname}`;
    url.pathname = `${basePath}/${encodeKey(key)}`;
  } else {
    url.pathname = `${basePath}/${bucket}/${encodeKey(key)}`;
  }
  return url;
}
