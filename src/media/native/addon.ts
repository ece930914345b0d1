// The one loader of the native DSP addon (native/build/Release/parley_dsp.node), shared by the typed wrappers of
// its modules, one file per binding of native/src (g711.ts, resampler.ts, vad.ts, dtmf.ts, tone.ts,
// time-stretch-binding.ts, block-writer.ts; src/media/udp-native.ts for the UDP endpoints).
//
// Conventions (native/src/handle.h):
// - Frames are Int16Array PCM views; outputs are caller-owned buffers written in place ("...Into" returns the
//   number of samples or bytes written). Nothing allocates per frame.
// - Stateful modules hold an opaque native handle: all native memory is allocated in the constructor and freed by
//   destroy() (or by the garbage collector if destroy() is never called). Using a destroyed module throws. They
//   call the addon through the handle's slot id (HandleSlot), cheaper per call than the handle itself.
// - Sizes are checked at the N-API boundary: a wrong array type is a TypeError, a too-short output a RangeError.
import { createRequire } from 'node:module';

const ADDON_PATH = '../../../native/build/Release/parley_dsp.node';

/** Raised when the addon cannot be loaded (built by `npm install`). */
export class NativeDspLoadError extends Error {
  override readonly name = 'NativeDspLoadError';
}

/** An opaque native handle (an External); only the module wrappers create and use them. */
export type Handle = { readonly __nativeHandle: unique symbol };
/**
 * The id of a handle's slot in the addon's table (native/src/handle.h, "Slots"), taken wherever a handle is: the
 * wrappers call through it (one warm table instead of two cold objects per call) and keep the Handle, which owns
 * the native state, for destroy() and for the garbage collector.
 */
export type HandleSlot = number & { readonly __nativeSlot: unique symbol };
/** What the module calls take: the handle or its slot. */
export type HandleRef = Handle | HandleSlot;

/** The functions every stateful module's wrapper uses (native/src/handle.cc, bind_resampler.cc). */
export interface HandleFunctions {
  destroy(handle: Handle): void;
  handleSlot(handle: Handle): HandleSlot;
}

function load(): object {
  const require = createRequire(import.meta.url);
  try {
    return require(ADDON_PATH) as object;
  } catch (err) {
    throw new NativeDspLoadError(`native DSP addon not loadable from ${ADDON_PATH} (build it with npm install)`, {
      cause: err,
    });
  }
}

// A copy with fast properties: N-API builds the module object in dictionary mode, so a call through it is a
// dictionary lookup in optimized code; on the copy it is a map check and a field load. Every wrapper calls
// through this one object.
const loaded: object = { ...load() };

/**
 * The loaded addon's functions (the fast-property copy), for a wrapper to view through the interface of the
 * functions its binding exports. Present functions depend on the build: the UDP ones exist on Linux only.
 */
export function nativeAddon(): object {
  return loaded;
}
