// The time-stretch entry points (WSOLA, native/src/bind_time_stretch.cc, time_stretch.h), for their one wrapper,
// the TimeStretch stage (src/media/time-stretch.ts).
import { nativeAddon, type Handle, type HandleFunctions, type HandleRef } from './addon.js';

export interface TimeStretchBinding extends HandleFunctions {
  createTimeStretch(rateHz: number, maxInput: number, speed: number): Handle;
  timeStretchProcess(handle: HandleRef, input: Int16Array, out: Int16Array, length: number): number;
  timeStretchFlush(handle: HandleRef, out: Int16Array): number;
  timeStretchSetSpeed(handle: HandleRef, speed: number): void;
  timeStretchMaxOutput(handle: HandleRef, n: number): number;
  timeStretchReset(handle: HandleRef): void;
}

export const timeStretchBinding = nativeAddon() as TimeStretchBinding;
