// Peers for the guarded client's tests: HTTP(S) servers on loopback that record what reached them, a resolver
// from a table, a self-signed certificate. "The internet" is 127.0.0.2: the tests' address policy lets it (and
// public addresses) through, while 127.0.0.1 plays the internal service an attacker wants reached.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isPublicAddress } from '../../src/net/address-policy.js';
import type { ResolveAll } from '../../src/net/guarded-fetch.js';

export const FAKE_PUBLIC = '127.0.0.2';
export const INTERNAL = '127.0.0.1';
/** The tests' address policy: the fake internet and real public addresses pass, everything else is refused. */
export const policy = (address: string) => address === FAKE_PUBLIC || isPublicAddress(address);

export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface TestServer {
  port: number;
  seen: Seen[];
  server: Server;
}

/** A server on `host`, port 0, recording every request (its body read whole) before `handler` answers it. */
export async function listen(
  t: { teardown(fn: () => unknown): void },
  host: string,
  handler: (req: IncomingMessage, res: ServerResponse, seen: Seen) => void,
  make: (fn: (req: IncomingMessage, res: ServerResponse) => void) => Server = (fn) => createServer(fn),
): Promise<TestServer> {
  const seen: Seen[] = [];
  const server = make((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const s = { method: req.method!, url: req.url!, headers: req.headers, body };
      seen.push(s);
      handler(req, res, s);
    });
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { port: (server.address() as AddressInfo).port, seen, server };
}

/** A handler answering `status` with `body` and `headers`. */
export const answer =
  (status: number, body = '', headers: Record<string, string> = {}) =>
  (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(status, headers);
    res.end(body);
  };

/** A resolver from a table, counting its calls per name. */
export function resolver(table: Record<string, string[] | string[][]>): ResolveAll & { calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  const fn = async (hostname: string) => {
    const n = (calls[hostname] = (calls[hostname] ?? 0) + 1);
    const entry = table[hostname];
    if (!entry) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    // A list of lists answers differently on each call (DNS rebinding).
    const addresses = (
      Array.isArray(entry[0]) ? (entry as string[][])[Math.min(n - 1, entry.length - 1)] : entry
    ) as string[];
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(fn, { calls });
}

/** A self-signed certificate (EC P-256, one day) for `name`, made with openssl. */
export function selfSignedCert(name: string): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'parley-test-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${name}`,
        '-addext',
        `subjectAltName=DNS:${name}`,
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
