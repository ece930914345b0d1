// A small user agent built on sip/ for the real-peer tests and the call-rate benchmark: it answers
// every INVITE with an SDP answer, records what happened (calls, DTMF by RFC 4733 or INFO, REFERs,
// NOTIFYs), and can place calls. Run alone (for SIPp load) with:
//   node --import tsx test/sip/peers/test-agent.ts --port 15300 [--host 127.0.0.1]

import dgram from 'node:dgram';
import { serializeUri } from '../../../sip/message/uri.js';
import {
  createUserAgent,
  type Dialog,
  type UserAgent,
  type LocalMedia,
  type DigestServer,
} from '../../../sip/index.js';
import { until } from '../../helpers/wait.js';

export interface AgentOptions {
  port: number;
  host?: string;
  /** RTP port advertised in answers and offers; with `listenRtp`, bound to count G.711 packets and RFC 4733 events. */
  rtpPort?: number;
  listenRtp?: boolean;
  auth?: DigestServer;
}

export interface AgentRecord {
  answered: number;
  ended: number;
  dtmfInfo: string[];
  dtmfRtp: string[];
  /** RTP packets of G.711 audio (payload type 0 or 8) received on the RTP port. */
  audioPackets: number;
  refers: string[];
  notifies: Array<{ status: number | undefined; state: string | undefined }>;
  endReasons: string[];
}

const EVENT_DIGITS = '0123456789*#ABCD'; // RFC 4733 3.2: events 0-15
/** RFC 3551 6: the static payload types of G.711 (PCMU 0, PCMA 8); telephone-event as both peers offer it. */
const G711_PAYLOAD_TYPES = [0, 8];
const TELEPHONE_EVENT_PAYLOAD_TYPE = 101;

export class TestAgent {
  readonly record: AgentRecord = {
    answered: 0,
    ended: 0,
    dtmfInfo: [],
    dtmfRtp: [],
    audioPackets: 0,
    refers: [],
    notifies: [],
    endReasons: [],
  };
  readonly dialogs: Dialog[] = [];
  /** Called for each REFER: by default answered with NOTIFY 200 OK after 100 Trying. */
  onRefer: (target: string, notify: (status: number, reason: string) => Promise<void>) => void = (_t, notify) => {
    notify(200, 'OK').catch(() => undefined);
  };
  #rtp: dgram.Socket | null = null;
  #lastEventTs = -1;

  private constructor(
    readonly ua: UserAgent,
    readonly media: LocalMedia,
  ) {}

  static async start(opts: AgentOptions): Promise<TestAgent> {
    const host = opts.host ?? '127.0.0.1';
    const ua = await createUserAgent({ host, port: opts.port, transports: ['udp', 'tcp'], auth: opts.auth });
    const media: LocalMedia = {
      address: host,
      port: opts.rtpPort ?? 30400,
      codecs: ['PCMU', 'PCMA'],
      telephoneEvent: true,
    };
    const agent = new TestAgent(ua, media);
    if (opts.listenRtp) await agent.#listenRtp(host, media.port);
    ua.on('invite', (req, res) => {
      agent.ua.createUAS(req, { media }).then(
        (d) => agent.#watch(d),
        () => undefined /* 488 already sent */,
      );
      void res;
    });
    ua.on('error', () => undefined);
    return agent;
  }

  #watch(dialog: Dialog): Dialog {
    this.record.answered++;
    this.dialogs.push(dialog);
    dialog.on('ended', (e) => {
      this.record.ended++;
      this.record.endReasons.push(e.reason);
    });
    dialog.on('info', (e) => {
      if (e.dtmf) this.record.dtmfInfo.push(e.dtmf.digit);
    });
    dialog.on('refer', (e) => {
      const target = serializeUri(e.referTo.uri);
      this.record.refers.push(target);
      this.onRefer(target, e.notify);
    });
    dialog.on('notify', (e) =>
      this.record.notifies.push({ status: e.sipfrag?.status, state: e.subscriptionState?.state }),
    );
    dialog.on('error', () => undefined);
    return dialog;
  }

  /** Place a call with our offer. */
  async call(uri: string, opts: { auth?: { username: string; password: string } } = {}): Promise<Dialog> {
    const d = await this.ua.createUAC(uri, { media: this.media, auth: opts.auth });
    this.record.answered++;
    return this.#watch(d);
  }

  /** G.711 packets counted; RFC 4733 2.5.1.3: one digit per event, counted once at its end bit (retransmitted ends ignored). */
  async #listenRtp(host: string, port: number): Promise<void> {
    const sock = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
    sock.on('message', (pkt) => {
      if (pkt.length < 16 || pkt[0] >> 6 !== 2) return;
      const pt = pkt[1] & 0x7f;
      if (G711_PAYLOAD_TYPES.includes(pt)) this.record.audioPackets++;
      if (pt !== TELEPHONE_EVENT_PAYLOAD_TYPE) return;
      const cc = pkt[0] & 0x0f;
      const payload = 12 + cc * 4;
      const event = pkt[payload];
      const end = (pkt[payload + 1] & 0x80) !== 0;
      const ts = pkt.readUInt32BE(4);
      if (end && ts !== this.#lastEventTs && event < EVENT_DIGITS.length) {
        this.#lastEventTs = ts;
        this.record.dtmfRtp.push(EVENT_DIGITS[event]);
      }
    });
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      sock.bind(port, host, () => resolve());
    });
    this.#rtp = sock;
  }

  /** Wait until `check` holds; on timeout the error shows what the agent recorded. */
  waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
    return until(check, {
      timeoutMs,
      intervalMs: 20,
      what: () => `test agent: ${what}; record ${JSON.stringify(this.record)}`,
    });
  }

  async close(): Promise<void> {
    this.#rtp?.close();
    await this.ua.close();
  }
}

// Standalone: answer calls until killed (SIGTERM), printing the number answered on exit.
if (import.meta.url === `file://${process.argv[1]}` && process.argv.includes('--port')) {
  const arg = (name: string, fallback: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 ? process.argv[i + 1] : fallback;
  };
  const agent = await TestAgent.start({ port: Number(arg('port', '15300')), host: arg('host', '127.0.0.1') });
  process.stdout.write(`listening ${agent.ua.port}\n`);
  process.on('SIGTERM', () => {
    process.stdout.write(`answered ${agent.record.answered} ended ${agent.record.ended}\n`);
    agent.close().finally(() => process.exit(0));
  });
}
