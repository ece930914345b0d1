// Test helpers for transactions: a transport that records what the transactions send (with the time on
// the manual clock), and request/response builders.
import { TransportError } from '../../../sip/errors.js';
import {
  createResponse,
  parseMessage,
  serializeMessage,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from '../../../sip/message/index.js';
import { ManualClock, type TransactionContext, type TransactionTransport } from '../../../sip/transaction/index.js';
import type { PreparedRequest } from '../../../sip/transport/transport.js';
import type { Source, Target } from '../../../sip/transport/types.js';

export interface Sent {
  at: number;
  msg: SipMessage;
  to: Target | Source | undefined;
}

export class RecordingTransport implements TransactionTransport {
  readonly sent: Sent[] = [];
  failSends = false;
  readonly sentBy = '192.0.2.10:5060';

  constructor(private readonly clock: ManualClock) {}

  prepareRequest(req: SipRequest, target: Target): PreparedRequest {
    return { bytes: serializeMessage(req), target, reliable: target.transport === 'TCP' };
  }

  async sendBytes(bytes: Buffer, target: Target): Promise<void> {
    if (this.failSends) throw new TransportError('send failed (test)');
    this.sent.push({ at: this.clock.now(), msg: parseMessage(bytes), to: target });
  }

  async sendResponseBytes(bytes: Buffer, _res: SipResponse, source?: Source): Promise<void> {
    if (this.failSends) throw new TransportError('send failed (test)');
    this.sent.push({ at: this.clock.now(), msg: parseMessage(bytes), to: source });
  }

  /** Start lines of what was sent, e.g. "INVITE" or "100". */
  lines(): string[] {
    return this.sent.map((s) => (s.msg.kind === 'request' ? s.msg.method : String(s.msg.status)));
  }

  times(what: string): number[] {
    return this.sent
      .filter((s) => (s.msg.kind === 'request' ? s.msg.method : String(s.msg.status)) === what)
      .map((s) => s.at);
  }
}

export function context(
  clock: ManualClock,
  transport: TransactionTransport,
  terminated: string[] = [],
): TransactionContext {
  return { transport, clock, timers: { T1: 500, T2: 4000, T4: 5000 }, terminated: (key) => terminated.push(key) };
}

let seq = 0;

export function request(
  method: string,
  opts: { branch?: string; toTag?: string; cseq?: number; callId?: string; via?: string } = {},
): SipRequest {
  const branch = opts.branch ?? `z9hG4bK-test-${++seq}`;
  const via = opts.via ?? `SIP/2.0/UDP 192.0.2.1:5060;branch=${branch}`;
  const to = opts.toTag ? `<sip:bob@example.com>;tag=${opts.toTag}` : '<sip:bob@example.com>';
  const raw = [
    `${method} sip:bob@example.com SIP/2.0`,
    `Via: ${via}`,
    'Max-Forwards: 70',
    `To: ${to}`,
    'From: <sip:alice@example.com>;tag=alice1',
    `Call-ID: ${opts.callId ?? 'call-1@example.com'}`,
    `CSeq: ${opts.cseq ?? 1} ${method}`,
    'Route: <sip:proxy.example.com;lr>',
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n');
  return parseMessage(raw) as SipRequest;
}

export function response(req: SipRequest, status: number, toTag = 'bob1'): SipResponse {
  return createResponse(req, status, { toTag });
}

export const UDP: Target = { transport: 'UDP', address: '192.0.2.20', port: 5060 };
export const TCP: Target = { transport: 'TCP', address: '192.0.2.20', port: 5060 };
export const UDP_SOURCE: Source = { transport: 'UDP', address: '192.0.2.1', port: 5060 };
export const TCP_SOURCE: Source = { transport: 'TCP', address: '192.0.2.1', port: 40000, connection: 1 };

/** Let rejected send promises reach their handlers. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}
