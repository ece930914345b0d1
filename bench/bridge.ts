// Micro benchmark of a bridged transfer's relay in the media worker (src/telephony/bridge.ts): CPU ns and heap bytes
// per 20 ms frame for one bridge, the caller's frame in and both legs' frames out (packets entered for the send, not
// sent): same codec, µ-law to A-law, and with the agent listening and speaking. Results to bench/results/bridge.json.
// Usage: node --import tsx bench/bridge.ts   (re-runs itself pinned to core 1 with --expose-gc)
// Env: BRIDGE_FRAMES (20000 per run; 3 runs, median reported).
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { mulawEncodeInto } from '../src/media/native/g711.js';
import { NativeUdpGroup } from '../src/media/udp-native.js';
import { TransferLeg } from '../src/telephony/bridge.js';
import type { CallMedia } from '../src/workers/worker-protocol.js';
import { measurePerFrame, median } from './measure.js';

const SELF = fileURLToPath(import.meta.url);
const FRAMES = Number(process.env.BRIDGE_FRAMES ?? 20000);
const RUNS = 3;

interface Result {
  case: string;
  nsPerFrame: number;
  bytesPerFrame: number | null;
}

const media = (codec: 'PCMU' | 'PCMA'): CallMedia => ({
  codec,
  payloadType: codec === 'PCMU' ? 0 : 8,
  clockRate: 8000,
  channels: 1,
  telephoneEventPayloadType: 101,
  ptimeMs: 20,
  direction: 'sendrecv',
});

function run(): Result[] {
  const group = new NativeUdpGroup(8);
  const ids = new Uint32Array(4);
  const counts = new Uint32Array(4);
  const speech = new Uint8Array(160);
  mulawEncodeInto(
    Int16Array.from({ length: 160 }, (_, i) => Math.round(6000 * Math.sin(i / 3))),
    speech,
  );
  const out: Result[] = [];
  const cases: Array<[string, 'PCMU' | 'PCMA', boolean]> = [
    ['PCMU caller, PCMU target (copied)', 'PCMU', false],
    ['PCMU caller, PCMA target (transcoded)', 'PCMA', false],
    ['PCMU caller, PCMA target, agent listening and speaking (mixed)', 'PCMA', true],
  ];
  let port = 47000;
  for (const [name, codec, listening] of cases) {
    const leg = TransferLeg.open(
      group,
      '127.0.0.1',
      (port += 2),
      'PCMU',
      () => 0,
      () => undefined,
    );
    // Port 9 (discard): packets are entered for the send and dropped from the table without a send.
    leg.bridge({ address: '127.0.0.1', port: 9 }, media(codec), null, listening);
    let pushed = 0;
    const push = (_bytes: Uint8Array) => void pushed++;
    const cost = measurePerFrame(
      () => {
        leg.fromCaller(speech, 0, 160);
        if (listening) leg.fromAgent(speech);
        leg.frame(listening ? push : null);
        leg.endpoint.collect(ids, counts, 0);
      },
      { warmup: 5000, frames: FRAMES, runs: RUNS, heapWindow: 2000 },
    );
    out.push({ case: name, nsPerFrame: Math.round(median(cost.runsNs)), bytesPerFrame: cost.bytesPerFrame });
    leg.close();
  }
  group.close();
  return out;
}

if (process.argv.includes('--child')) {
  process.stdout.write(JSON.stringify(run()));
} else {
  const child = spawnSync(
    'taskset',
    ['-c', '1', process.execPath, '--expose-gc', '--max-semi-space-size=64', '--import', 'tsx', SELF, '--child'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  if (child.status !== 0) throw new Error(`benchmark child failed: ${child.status}`);
  const results = JSON.parse(child.stdout) as Result[];
  for (const r of results)
    console.log(`${r.case.padEnd(70)} ${String(r.nsPerFrame).padStart(8)} ns/frame  ${r.bytesPerFrame ?? '-'} B/frame`);
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL('./results/bridge.json', import.meta.url),
    JSON.stringify(
      {
        benchmark: 'bridge',
        date: new Date().toISOString(),
        machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadavg: os.loadavg() },
        method: `CPU time (user+sys) per 20 ms frame of one bridge, median of ${RUNS} runs of ${FRAMES}, pinned to core 1; heap bytes per frame over GC-free windows`,
        results,
      },
      null,
      2,
    ) + '\n',
  );
}
