// A build of the addon without the UDP endpoints (every system but Linux): the DSP modules still load and work,
// and opening a native UDP socket or group throws UdpIoError ENOSYS saying so. Run in a child process whose addon
// has its udp* functions removed as it loads (a require hook), as the non-Linux build exports them.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NATIVE_UDP_AVAILABLE } from '../../src/media/udp-native.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

t.test('this Linux build has the UDP endpoints', async (t) => {
  t.equal(NATIVE_UDP_AVAILABLE, process.platform === 'linux');
});

const HOOK = `
const Module = require('node:module');
const load = Module._extensions['.node'];
Module._extensions['.node'] = function (module, filename) {
  load(module, filename);
  if (filename.endsWith('parley_dsp.node')) {
    for (const name of Object.keys(module.exports)) if (name.startsWith('udp')) delete module.exports[name];
  }
};
`;

const CHILD = `
const root = ${JSON.stringify(ROOT)};
const udp = await import(root + 'src/media/udp-native.ts');
const g711 = await import(root + 'src/media/native/g711.ts');
const out = new Uint8Array(1);
g711.mulawEncodeInto(new Int16Array([0]), out);
const attempt = (f) => { try { f(); return null; } catch (err) { return { name: err.name, code: err.code, message: err.message }; } };
console.log(JSON.stringify({
  available: udp.NATIVE_UDP_AVAILABLE,
  mulawOfZero: out[0],
  socket: attempt(() => udp.NativeUdpSocket.open({ host: '127.0.0.1', port: 0 })),
  group: attempt(() => new udp.NativeUdpGroup(1)),
  shared: attempt(() => udp.SharedUdpSocket.open({ host: '127.0.0.1', port: 0, maxPeers: 1 })),
  peers: new udp.UdpPeerTable(4).size,
}));
`;

t.test('without the UDP endpoints: DSP works, UDP throws ENOSYS', async (t) => {
  const dir = t.testdir({});
  const hook = join(dir, 'drop-udp.cjs');
  writeFileSync(hook, HOOK);
  const child = spawnSync(
    process.execPath,
    ['--require', hook, '--import', 'tsx', '--input-type=module', '--eval', CHILD],
    { cwd: ROOT, encoding: 'utf8' },
  );
  t.equal(child.status, 0, child.stderr);
  const result = JSON.parse(child.stdout) as Record<string, unknown>;
  t.equal(result.available, false);
  t.equal(result.mulawOfZero, 0xff, 'G.711 still encodes (mu-law of 0 is 0xff)');
  t.equal(result.peers, 0, 'the pure-JavaScript peer table still works');
  for (const what of ['socket', 'group', 'shared']) {
    t.match(result[what], { name: 'UdpIoError', code: 'ENOSYS', message: /native UDP I\/O is Linux-only/ }, what);
  }
});
