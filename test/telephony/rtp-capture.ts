// What a node sends to peers that cannot show it (SIPp keeps no copy of the RTP it receives): tcpdump captures the
// UDP datagrams leaving a range of source ports on the loopback interface, and the capture file (libpcap format,
// Ethernet framing as Linux gives loopback) is read back into datagrams. Started and stopped by its PID.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Peer, tempDir } from '../sip/peers/peers.js';

const START_TIMEOUT_MS = 5000;
/** libpcap's file header, and each record's header before the frame. */
const PCAP_FILE_HEADER_BYTES = 24;
const PCAP_RECORD_HEADER_BYTES = 16;
const PCAP_MAGIC_LE = 0xa1b2c3d4;
const LINKTYPE_ETHERNET = 1;
const ETHERNET_HEADER_BYTES = 14;
const ETHERTYPE_IPV4 = 0x0800;
const IP_PROTOCOL_UDP = 17;
const UDP_HEADER_BYTES = 8;

export interface CapturedDatagram {
  srcPort: number;
  dstPort: number;
  /** Capture time, in ms. */
  atMs: number;
  data: Buffer;
}

/** Reads a libpcap file of Ethernet frames: its IPv4 UDP datagrams, in capture order. */
export function readPcap(file: string): CapturedDatagram[] {
  const buf = readFileSync(file);
  if (buf.length < PCAP_FILE_HEADER_BYTES) return [];
  if (buf.readUInt32LE(0) !== PCAP_MAGIC_LE) throw new Error(`${file}: not a little-endian libpcap file`);
  if (buf.readUInt32LE(20) !== LINKTYPE_ETHERNET)
    throw new Error(`${file}: link type ${buf.readUInt32LE(20)}, not Ethernet`);
  const out: CapturedDatagram[] = [];
  for (let at = PCAP_FILE_HEADER_BYTES; at + PCAP_RECORD_HEADER_BYTES <= buf.length;) {
    const sec = buf.readUInt32LE(at);
    const usec = buf.readUInt32LE(at + 4);
    const caught = buf.readUInt32LE(at + 8);
    const frame = buf.subarray(at + PCAP_RECORD_HEADER_BYTES, at + PCAP_RECORD_HEADER_BYTES + caught);
    at += PCAP_RECORD_HEADER_BYTES + caught;
    if (frame.length < ETHERNET_HEADER_BYTES + 20 || frame.readUInt16BE(12) !== ETHERTYPE_IPV4) continue;
    const ip = frame.subarray(ETHERNET_HEADER_BYTES);
    if (ip[9] !== IP_PROTOCOL_UDP) continue;
    const udp = ip.subarray((ip[0] & 0x0f) * 4);
    const length = udp.readUInt16BE(4);
    out.push({
      srcPort: udp.readUInt16BE(0),
      dstPort: udp.readUInt16BE(2),
      atMs: sec * 1000 + usec / 1000,
      data: Buffer.from(udp.subarray(UDP_HEADER_BYTES, length)),
    });
  }
  return out;
}

export interface RtpCapture {
  /** Stops tcpdump and reads what it caught. */
  stop(): Promise<CapturedDatagram[]>;
}

/** Captures UDP on loopback to and from ports `min`..`max` (a node's RTP range) until stopped. */
export async function captureUdpFrom(min: number, max: number): Promise<RtpCapture> {
  const dir = tempDir('rtp-capture');
  const file = join(dir, 'capture.pcap');
  // -U: each packet written as it comes, so what was caught before the stop is in the file.
  const peer = new Peer(
    'tcpdump',
    spawn('tcpdump', ['-i', 'lo', '-U', '-n', '-w', file, `udp and portrange ${min}-${max}`], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  try {
    await peer.waitUntil(() => /listening on lo/.test(peer.log), START_TIMEOUT_MS, 'listening on lo');
  } catch (err) {
    await peer.stop();
    throw err;
  }
  return {
    async stop() {
      await peer.stop();
      return existsSync(file) ? readPcap(file) : [];
    },
  };
}
