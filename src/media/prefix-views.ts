// Views of the first n elements of a preallocated buffer, made once per length: a stream's frames come in one or
// two sizes, so its per-frame path hands the same few views out again instead of allocating one per frame.

/** The first n elements of `whole` (whole itself when n is its length), from `cache` or made once into it. */
export function prefixView<T extends Int16Array | Uint8Array>(cache: Map<number, T>, whole: T, n: number): T {
  if (n === whole.length) return whole;
  let v = cache.get(n);
  if (!v) cache.set(n, (v = whole.subarray(0, n) as T));
  return v;
}
