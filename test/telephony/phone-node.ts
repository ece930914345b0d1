// A Parley node as a user runs it (`npm start`) for end-to-end call tests: a child process on a fresh PostgreSQL
// database with SIP on a free port of 127.0.0.1, real media workers running the echo engine, and its own RTP port
// range (so parallel test files never share one). The tests reach it as peers and clients would: SIP and RTP on
// loopback, the HTTP API for agents, outbound calls and the saved records.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startNode, type NodeProcess } from '../realtime/node-process.js';
import { api, type ApiClient } from '../helpers/server.js';
import { createTempDatabase } from '../helpers/temp-database.js';
import { until } from '../helpers/wait.js';
import { tempDir } from '../sip/peers/peers.js';

const BOOTSTRAP_KEY = 'bootstrap-key-for-phone-e2e-0123456789';
/** RTP ports of one node: 50 calls' pairs, at a random even base so parallel nodes rarely overlap. */
const RTP_RANGE_PORTS = 100;
const RTP_BASE_MIN = 20_000;
const RTP_BASE_SPAN = 30_000;
const STOP_TIMEOUT_MS = 20_000;

export interface PhoneNode {
  process: NodeProcess;
  /** The node's database (its PostgreSQL URL), for what the API no longer shows once the node has stopped. */
  databaseUrl: string;
  dataDir: string;
  client: ApiClient;
  url: string;
  sipPort: number;
  /** The node's RTP ports, first and last (RTCP included). */
  rtpPorts: { min: number; max: number };
  /** The saved record, as GET /v1/conversations/:id answers it (status and body). */
  conversation(id: string): Promise<{ status: number; body: Record<string, any> }>;
  /** Waits until the record is ended (ended_by set), then returns it. */
  endedConversation(id: string, timeoutMs?: number): Promise<Record<string, any>>;
  /** The ids of the project's conversations, newest first. */
  conversationIds(): Promise<string[]>;
  /** SIGTERM, wait for the exit (SIGKILL after a bound), drop the database (unless reused). */
  stop(): Promise<void>;
}

export interface PhoneNodeOptions {
  env?: Record<string, string>;
  /** The trunks of a trunks file written for the node (PARLEY_TRUNKS_FILE), as the file holds them. */
  trunks?: Record<string, unknown>[];
  /** Modules imported before src/main.ts (test hooks). */
  preload?: string[];
  /** The database and data directory of an earlier node (its restart), kept when this one stops. */
  reuse?: { databaseUrl: string; dataDir: string };
}

export async function startPhoneNode(opts: PhoneNodeOptions = {}): Promise<PhoneNode> {
  const db = opts.reuse
    ? { url: opts.reuse.databaseUrl, drop: async () => undefined }
    : await createTempDatabase('parley_test_phone');
  const dataDir = opts.reuse?.dataDir ?? tempDir('phone-node-data');
  const base = RTP_BASE_MIN + 2 * Math.floor((Math.random() * RTP_BASE_SPAN) / 2);
  const rtpPorts = { min: base, max: base + RTP_RANGE_PORTS - 1 };
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    PARLEY_BOOTSTRAP_API_KEY: BOOTSTRAP_KEY,
    PARLEY_DATA_DIR: dataDir,
    // One name across restarts: a restart recovers what the node left in progress.
    PARLEY_NODE_ID: `phone-node-${dataDir.slice(-6)}`,
    PARLEY_SIP_PORT: '0',
    PARLEY_RTP_PORT_MIN: `${rtpPorts.min}`,
    PARLEY_RTP_PORT_MAX: `${rtpPorts.max}`,
    PARLEY_ENGINE_DEFAULT: 'echo',
    ...opts.env,
  };
  if (opts.trunks) {
    const file = join(tempDir('phone-node-trunks'), 'trunks.json');
    writeFileSync(file, JSON.stringify({ trunks: opts.trunks }));
    env.PARLEY_TRUNKS_FILE = file;
  }
  let proc: NodeProcess;
  try {
    proc = await startNode(env, opts.preload);
  } catch (err) {
    await db.drop();
    throw err;
  }
  const [, sipPort] = await proc.waitFor(/"port":(\d+),"host":"127\.0\.0\.1"[^\n]*"msg":"SIP listening"/);
  const client = api({ url: proc.url, apiKey: BOOTSTRAP_KEY });
  const conversation = async (id: string) => {
    const r = await client.get(`/v1/conversations/${id}`);
    return { status: r.status, body: r.body?.conversation ?? r.body };
  };
  let stopped: Promise<void> | null = null;
  return {
    process: proc,
    databaseUrl: db.url,
    dataDir,
    client,
    url: proc.url,
    sipPort: Number(sipPort),
    rtpPorts,
    conversation,
    async endedConversation(id, timeoutMs = 20_000) {
      let last: Record<string, any> = {};
      await until(
        async () => {
          const r = await conversation(id);
          last = r.body;
          return r.status === 200 && r.body.ended_by != null;
        },
        { timeoutMs, intervalMs: 100, what: () => `the record of ${id} ended: ${JSON.stringify(last).slice(0, 500)}` },
      );
      return last;
    },
    async conversationIds() {
      const r = await client.get('/v1/conversations');
      if (r.status !== 200) throw new Error(`GET /v1/conversations: ${r.status} ${JSON.stringify(r.body)}`);
      return (r.body.conversations as { id: string }[]).map((c) => c.id);
    },
    stop() {
      stopped ??= (async () => {
        proc.kill('SIGTERM');
        const killer = setTimeout(() => proc.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await proc.exited;
        clearTimeout(killer);
        if (!opts.reuse) await db.drop();
      })();
      return stopped;
    },
  };
}

/** The user items' transcripts of a record, in order. */
export function userTranscripts(record: Record<string, any>): (string | null)[] {
  return (record.items as { role: string; live_transcript: string | null }[])
    .filter((i) => i.role === 'user')
    .map((i) => i.live_transcript);
}
