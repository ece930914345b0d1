// N-API binding of the stereo interleave (pcm_interleave.h), called once per 20 ms tick by every recording
// (src/media/recording.ts). A plain napi_callback, not a Napi::Function: node-addon-api's CallbackInfo takes six
// arguments on the stack and heap-allocates for more, and this call has seven. Bounds are checked once per call,
// nothing is allocated.
#include "handle.h"
#include "pcm_interleave.h"

#include <cmath>

namespace parley {
namespace {

// interleaveStereo(left, leftOffset, right, rightOffset, n, out, outPair)
constexpr size_t kInterleaveArgs = 7;

// A sample count or offset: a non-negative integer (a double holds every one a typed array can index exactly).
bool ToCount(napi_env env, napi_value value, double* out) {
  return napi_get_value_double(env, value, out) == napi_ok && *out >= 0 && std::trunc(*out) == *out;
}

// out[2 * (outPair + i)] = left[leftOffset + i], out[2 * (outPair + i) + 1] = right[rightOffset + i] for i in
// [0, n): all Int16Array. A range outside an array, or out overlapping left or right, is a RangeError and
// nothing is written. Returns undefined.
napi_value InterleaveStereoCall(napi_env raw, napi_callback_info cb) {
  Napi::Env env(raw);
  size_t argc = kInterleaveArgs;
  napi_value argv[kInterleaveArgs];
  if (napi_get_cb_info(raw, cb, &argc, argv, nullptr, nullptr) != napi_ok) return nullptr;
  if (argc < kInterleaveArgs) {
    ThrowType(env, "interleaveStereo(left, leftOffset, right, rightOffset, n, out, outPair)");
    return nullptr;
  }
  View<int16_t> left = GetI16(env, Napi::Value(raw, argv[0]), "left must be an Int16Array");
  if (left.data == nullptr) return nullptr;
  View<int16_t> right = GetI16(env, Napi::Value(raw, argv[2]), "right must be an Int16Array");
  if (right.data == nullptr) return nullptr;
  View<int16_t> out = GetI16(env, Napi::Value(raw, argv[5]), "out must be an Int16Array");
  if (out.data == nullptr) return nullptr;
  double lo, ro, n, at;
  if (!ToCount(raw, argv[1], &lo) || !ToCount(raw, argv[3], &ro) || !ToCount(raw, argv[4], &n) ||
      !ToCount(raw, argv[6], &at)) {
    ThrowRange(env, "offsets and n must be non-negative integers");
    return nullptr;
  }
  if (lo + n > static_cast<double>(left.length) || ro + n > static_cast<double>(right.length)) {
    ThrowRange(env, "offset + n beyond the input");
    return nullptr;
  }
  if (2 * (at + n) > static_cast<double>(out.length)) {
    ThrowRange(env, "outPair + n pairs beyond out");
    return nullptr;
  }
  const size_t count = static_cast<size_t>(n);
  const int16_t* l = left.data + static_cast<size_t>(lo);
  const int16_t* r = right.data + static_cast<size_t>(ro);
  int16_t* o = out.data + 2 * static_cast<size_t>(at);
  // Overlap compared as addresses (uintptr_t: pointers into different arrays are not ordered in C++).
  const uintptr_t ob = reinterpret_cast<uintptr_t>(o);
  const uintptr_t oe = reinterpret_cast<uintptr_t>(o + 2 * count);
  const uintptr_t lb = reinterpret_cast<uintptr_t>(l);
  const uintptr_t rb = reinterpret_cast<uintptr_t>(r);
  if (count > 0 && ((lb < oe && ob < reinterpret_cast<uintptr_t>(l + count)) ||
                    (rb < oe && ob < reinterpret_cast<uintptr_t>(r + count)))) {
    ThrowRange(env, "out overlaps an input");
    return nullptr;
  }
  InterleaveStereo(l, r, o, count);
  return nullptr;
}

}  // namespace

void InitPcm(Napi::Env env, Napi::Object exports) {
  napi_value fn;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "interleaveStereo", NAPI_AUTO_LENGTH, InterleaveStereoCall, nullptr, &fn));
  exports.Set("interleaveStereo", Napi::Value(env, fn));
}

}  // namespace parley
