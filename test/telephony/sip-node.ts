// A Parley node for the SIP service's tests, in-process: the control plane on a fresh PostgreSQL database
// (test/helpers/server.ts), the SIP service on port 0 (UDP and TCP, 127.0.0.1), and a test double of the media
// workers (worker-double.ts). `call()` places an outbound call through the HTTP API, as a client would.
import { createLogger } from '../../src/log.js';
import { startSipService, type SipService } from '../../src/telephony/sip-service.js';
import type { Locator } from '../../src/telephony/locate.js';
import { Trunks, type Trunk } from '../../src/telephony/trunks.js';
import { api, startTestServer, type ApiClient, type TestServer } from '../helpers/server.js';
import { WorkerDouble } from './worker-double.js';

export interface SipNode {
  server: TestServer;
  sip: SipService;
  workers: WorkerDouble;
  client: ApiClient;
  close(): Promise<void>;
}

export interface SipNodeOptions {
  env?: Record<string, string>;
  trunks?: Trunk[];
  workers?: number;
  mediaReadyTimeoutMs?: number;
  locator?: Locator;
}

export async function startSipNode(opts: SipNodeOptions = {}): Promise<SipNode> {
  const server = await startTestServer({ db: 'postgres', env: { PARLEY_SIP_PORT: '0', ...opts.env } });
  const workers = new WorkerDouble(server.sql, opts.workers ?? 1);
  let sip: SipService;
  try {
    sip = await startSipService({
      settings: server.settings,
      sql: server.sql,
      log: createLogger(server.settings.PARLEY_LOG_LEVEL),
      workers,
      trunks: opts.trunks ? new Trunks(opts.trunks) : undefined,
      mediaReadyTimeoutMs: opts.mediaReadyTimeoutMs,
      locator: opts.locator,
    });
  } catch (err) {
    await server.close();
    throw err;
  }
  server.ctx.outboundCalls = sip.outboundCalls;
  return {
    server,
    sip,
    workers,
    client: api(server),
    close: async () => {
      try {
        await sip.stop(1_000);
      } finally {
        await server.close();
      }
    },
  };
}

/** An agent of the main project owning `number` (a custom number), with extra writable fields. */
export async function agentWithNumber(
  client: ApiClient,
  name: string,
  number: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const r = await client.put('/v1/agents/upsert', {
    name,
    phone_number: 'custom',
    custom_phone_numbers: [number],
    ...extra,
  });
  if (r.status !== 200) throw new Error(`upsert of agent ${name} failed: ${r.status} ${JSON.stringify(r.body)}`);
}

/** A trunk accepting INVITEs from `sources`, redirects followed. */
export const inboundTrunk = (
  name: string,
  sources: string[],
  extra: Partial<NonNullable<Trunk['inbound']>> = {},
): Trunk => ({
  name,
  inbound: { sources, auth: null, follow_redirects: true, allow_refer: false, trust_asserted_identity: true, ...extra },
  outbound: null,
});
