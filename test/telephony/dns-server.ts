// A real authoritative DNS server on loopback (UDP, port 0) answering from a fixed zone: the peer the RFC 3263
// tests resolve against. Names with no records get NXDOMAIN; a name with records of other types gets NODATA.
import { createSocket, type Socket } from 'node:dgram';
import dnsPacket, { type Answer, type NaptrData, type SrvData } from 'dns-packet';

export type ZoneRecord =
  | { name: string; type: 'A' | 'AAAA'; data: string }
  | { name: string; type: 'SRV'; data: Required<SrvData> }
  | { name: string; type: 'NAPTR'; data: NaptrData };

const NXDOMAIN = 3; // RFC 1035 4.1.1 RCODE "Name Error"
const SERVFAIL = 2; // RFC 1035 4.1.1 RCODE "Server failure"
const TTL_SEC = 60;

export interface DnsServer {
  /** For Resolver.setServers: `127.0.0.1:<port>`. */
  address: string;
  /** Every question asked, `<name> <type>`, in arrival order. */
  queries: string[];
  /** Names whose every query is answered SERVFAIL. */
  failing: Set<string>;
  close(): Promise<void>;
}

export async function startDnsServer(records: readonly ZoneRecord[]): Promise<DnsServer> {
  const socket: Socket = createSocket('udp4');
  const queries: string[] = [];
  const failing = new Set<string>();
  socket.on('message', (msg, rinfo) => {
    const query = dnsPacket.decode(msg);
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    queries.push(`${name} ${question.type}`);
    const owned = records.filter((r) => r.name.toLowerCase() === name);
    const answers = owned.filter((r) => r.type === question.type).map((r) => ({ ...r, ttl: TTL_SEC }) as Answer);
    let flags = dnsPacket.AUTHORITATIVE_ANSWER | (query.flag_rd ? dnsPacket.RECURSION_DESIRED : 0);
    if (failing.has(name)) flags |= SERVFAIL;
    else if (owned.length === 0) flags |= NXDOMAIN;
    const response = dnsPacket.encode({
      type: 'response',
      id: query.id,
      flags,
      questions: query.questions,
      answers: failing.has(name) ? [] : answers,
    });
    socket.send(response, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => resolve());
  });
  return {
    address: `127.0.0.1:${socket.address().port}`,
    queries,
    failing,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
