// Native handles and their slots (native/src/handle.h, "Slots"): every module the addon makes has a slot id that
// its calls take as they take the handle itself; an id that names no live slot of the right kind is an error, never
// another module; a destroyed module's id says so; a collected handle's slot is reused under a new generation, so
// the old id stays an error.
import t from 'tap';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Handle = object;
interface HandleAddon {
  handleSlot(handle: Handle): number;
  createVad(rateHz: number, threshold: number, prebufferMs: number, minSpeechMs: number, minSilenceMs: number): Handle;
  vadProcess(handle: Handle | number, frame: Int16Array): number;
  vadInfo(handle: Handle | number, out: Float64Array): void;
  createDtmf(rateHz: number): Handle;
  dtmfProcess(handle: Handle | number, frame: Int16Array, out: Uint8Array): number;
  destroy(handle: Handle | number): void;
}

const ADDON = fileURLToPath(new URL('../../native/build/Release/parley_dsp.node', import.meta.url));
const addon = createRequire(import.meta.url)(ADDON) as HandleAddon;
/** handle.h: id = index | generation << INDEX_BITS. */
const INDEX_BITS = 20;
const FRAME = 160;

const newVad = (): Handle => addon.createVad(8000, 0.5, 300, 100, 500);
function samplesSeen(handle: Handle | number): number {
  const info = new Float64Array(5);
  addon.vadInfo(handle, info);
  return info[3];
}

t.test('a slot id reaches its own module, as the handle does', async (t) => {
  const a = newVad();
  const b = newVad();
  const slotA = addon.handleSlot(a);
  const slotB = addon.handleSlot(b);
  t.not(slotA, slotB, 'two live modules, two slots');
  t.ok(Number.isInteger(slotA) && slotA > 0 && slotA < 2 ** 31, 'a positive small integer');
  t.equal(addon.handleSlot(a), slotA, 'a handle keeps its slot');
  const frame = new Int16Array(FRAME);
  for (let i = 0; i < 3; i++) addon.vadProcess(slotA, frame);
  addon.vadProcess(b, frame);
  t.equal(samplesSeen(a), 3 * FRAME, "A's calls by slot reached A");
  t.equal(samplesSeen(slotB), FRAME, "B's call by handle, read by slot");
  addon.destroy(a);
  addon.destroy(b);
});

t.test('an id naming no live slot of the kind is an error, never another module', async (t) => {
  const vad = newVad();
  const dtmf = addon.createDtmf(8000);
  const slot = addon.handleSlot(vad);
  const frame = new Int16Array(FRAME);
  for (const id of [0, -1, -slot, (1 << INDEX_BITS) - 1, slot + (1 << INDEX_BITS)]) {
    t.throws(() => addon.vadProcess(id, frame), { name: 'TypeError', message: /slot/ }, `id ${id}`);
  }
  t.throws(
    () => addon.vadProcess(addon.handleSlot(dtmf), frame),
    { name: 'TypeError', message: /wrong kind/ },
    "a DTMF detector's slot",
  );
  t.throws(
    () => addon.dtmfProcess(slot, frame, new Uint8Array(8)),
    { name: 'TypeError', message: /wrong kind/ },
    "a VAD's slot for the DTMF detector",
  );
  t.throws(() => addon.handleSlot(slot as never), TypeError, 'handleSlot takes the handle');
  t.throws(() => addon.destroy(slot), TypeError, 'only the handle destroys');
  t.equal(samplesSeen(vad), 0, 'nothing was fed to the VAD');
  addon.destroy(vad);
  t.throws(() => addon.vadProcess(slot, frame), /after destroy/, "a destroyed module's slot says so");
  t.throws(() => addon.vadProcess(vad, frame), /after destroy/, 'as its handle does');
  addon.destroy(dtmf);
});

t.test("a collected handle's slot is reused under a new generation; the old id stays an error", async (t) => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const slots: number[] = [];
  (() => {
    // Handles made and dropped without destroy(): the collector frees them and gives their slots back.
    for (let i = 0; i < 8; i++) slots.push(addon.handleSlot(newVad()));
  })();
  const freed = new Set(slots.map((s) => s & ((1 << INDEX_BITS) - 1)));
  let reused: { handle: Handle; slot: number } | null = null;
  const kept: Handle[] = [];
  for (let round = 0; round < 20 && reused === null; round++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    const handle = newVad();
    kept.push(handle);
    const slot = addon.handleSlot(handle);
    if (freed.has(slot & ((1 << INDEX_BITS) - 1))) reused = { handle, slot };
  }
  if (reused === null) return t.fail('no collected slot was reused after 20 collections');
  const old = slots.find((s) => (s & ((1 << INDEX_BITS) - 1)) === (reused!.slot & ((1 << INDEX_BITS) - 1)))!;
  t.equal(reused.slot >>> INDEX_BITS, (old >>> INDEX_BITS) + 1, 'the next generation');
  const frame = new Int16Array(FRAME);
  t.throws(() => addon.vadProcess(old, frame), { name: 'TypeError', message: /stale/ }, 'the old id');
  addon.vadProcess(reused.slot, frame);
  t.equal(samplesSeen(reused.handle), FRAME, 'the new id reaches the new module');
  for (const h of kept) addon.destroy(h);
});
