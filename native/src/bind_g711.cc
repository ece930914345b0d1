// N-API bindings: G.711 codecs, PCM conversions, gain, mixing, and the batched encode for many streams.
#include "g711.h"
#include "handle.h"

namespace parley {
namespace {

// Codec identifiers shared with src/media/native.ts (G711_MULAW, G711_ALAW).
enum Codec : int32_t { kMulaw = 0, kAlaw = 1 };

using EncodeFn = void (*)(const int16_t*, uint8_t*, size_t);
using DecodeFn = void (*)(const uint8_t*, int16_t*, size_t);

template <EncodeFn fn>
Napi::Value Encode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  View<int16_t> pcm = GetI16(env, info[0], "pcm must be an Int16Array");
  if (pcm.data == nullptr) return env.Undefined();
  View<uint8_t> out = GetU8(env, info[1], "out must be a Uint8Array");
  if (out.data == nullptr) return env.Undefined();
  if (out.length < pcm.length) return ThrowRange(env, "out is shorter than pcm");
  fn(pcm.data, out.data, pcm.length);
  return Napi::Number::New(env, static_cast<double>(pcm.length));
}

// decode(payload, out[, offset, length]): decodes payload[offset, offset + length) (default: all of it), so a
// payload is read where it lies (inside a packet or a jitter buffer's store) without a view made per packet.
template <DecodeFn fn>
Napi::Value Decode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  View<uint8_t> in = GetU8(env, info[0], "payload must be a Uint8Array");
  if (in.data == nullptr) return env.Undefined();
  View<int16_t> out = GetI16(env, info[1], "out must be an Int16Array");
  if (out.data == nullptr) return env.Undefined();
  size_t offset = 0;
  size_t length = in.length;
  if (info.Length() > 2) {
    if (!info[2].IsNumber() || !info[3].IsNumber()) return ThrowType(env, "offset and length must be numbers");
    int64_t o = info[2].As<Napi::Number>().Int64Value();
    int64_t n = info[3].As<Napi::Number>().Int64Value();
    if (o < 0 || n < 0 || static_cast<uint64_t>(o) + static_cast<uint64_t>(n) > in.length)
      return ThrowRange(env, "offset + length beyond the payload");
    offset = static_cast<size_t>(o);
    length = static_cast<size_t>(n);
  }
  if (out.length < length) return ThrowRange(env, "out is shorter than the payload");
  fn(in.data + offset, out.data, length);
  return Napi::Number::New(env, static_cast<double>(length));
}

Napi::Value Pcm16ToFloat32(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  View<int16_t> in = GetI16(env, info[0], "pcm must be an Int16Array");
  if (in.data == nullptr) return env.Undefined();
  View<float> out = GetF32(env, info[1], "out must be a Float32Array");
  if (out.data == nullptr) return env.Undefined();
  if (out.length < in.length) return ThrowRange(env, "out is shorter than pcm");
  Pcm16ToFloat(in.data, out.data, in.length);
  return Napi::Number::New(env, static_cast<double>(in.length));
}

Napi::Value Float32ToPcm16(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  View<float> in = GetF32(env, info[0], "samples must be a Float32Array");
  if (in.data == nullptr) return env.Undefined();
  View<int16_t> out = GetI16(env, info[1], "out must be an Int16Array");
  if (out.data == nullptr) return env.Undefined();
  if (out.length < in.length) return ThrowRange(env, "out is shorter than samples");
  FloatToPcm16(in.data, out.data, in.length);
  return Napi::Number::New(env, static_cast<double>(in.length));
}

Napi::Value Gain(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  View<int16_t> buf = GetI16(env, info[0], "pcm must be an Int16Array");
  if (buf.data == nullptr) return env.Undefined();
  if (!info[1].IsNumber()) return ThrowType(env, "gain must be a number");
  ApplyGain(buf.data, buf.length, info[1].As<Napi::Number>().FloatValue());
  return env.Undefined();
}

Napi::Value Mix(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  View<int16_t> dst = GetI16(env, info[0], "dst must be an Int16Array");
  if (dst.data == nullptr) return env.Undefined();
  View<int16_t> src = GetI16(env, info[1], "src must be an Int16Array");
  if (src.data == nullptr) return env.Undefined();
  if (!info[2].IsNumber()) return ThrowType(env, "gain must be a number");
  if (src.length != dst.length) return ThrowRange(env, "src and dst differ in length");
  MixInto(dst.data, src.data, dst.length, info[2].As<Napi::Number>().FloatValue());
  return env.Undefined();
}

// encodeBatch(codec, frames: Int16Array[], outs: Uint8Array[]): encodes frames[i] into outs[i] for every stream
// in one crossing. Returns the number of frames encoded.
Napi::Value EncodeBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) return ThrowType(env, "codec must be a number");
  int32_t codec = info[0].As<Napi::Number>().Int32Value();
  if (codec != kMulaw && codec != kAlaw) return ThrowRange(env, "unknown codec");
  if (!info[1].IsArray() || !info[2].IsArray()) return ThrowType(env, "frames and outs must be arrays");
  Napi::Array frames = info[1].As<Napi::Array>();
  Napi::Array outs = info[2].As<Napi::Array>();
  uint32_t count = frames.Length();
  if (outs.Length() != count) return ThrowRange(env, "frames and outs differ in length");
  EncodeFn fn = codec == kMulaw ? MulawEncode : AlawEncode;
  for (uint32_t i = 0; i < count; i++) {
    View<int16_t> pcm = GetI16(env, frames.Get(i), "frames[i] must be an Int16Array");
    if (pcm.data == nullptr) return env.Undefined();
    View<uint8_t> out = GetU8(env, outs.Get(i), "outs[i] must be a Uint8Array");
    if (out.data == nullptr) return env.Undefined();
    if (out.length < pcm.length) return ThrowRange(env, "outs[i] is shorter than frames[i]");
    fn(pcm.data, out.data, pcm.length);
  }
  return Napi::Number::New(env, count);
}

}  // namespace

void InitG711(Napi::Env env, Napi::Object exports) {
  exports.Set("mulawEncode", Napi::Function::New(env, Encode<MulawEncode>, "mulawEncode"));
  exports.Set("mulawDecode", Napi::Function::New(env, Decode<MulawDecode>, "mulawDecode"));
  exports.Set("alawEncode", Napi::Function::New(env, Encode<AlawEncode>, "alawEncode"));
  exports.Set("alawDecode", Napi::Function::New(env, Decode<AlawDecode>, "alawDecode"));
  exports.Set("pcm16ToFloat32", Napi::Function::New(env, Pcm16ToFloat32, "pcm16ToFloat32"));
  exports.Set("float32ToPcm16", Napi::Function::New(env, Float32ToPcm16, "float32ToPcm16"));
  exports.Set("applyGain", Napi::Function::New(env, Gain, "applyGain"));
  exports.Set("mixInto", Napi::Function::New(env, Mix, "mixInto"));
  exports.Set("encodeBatch", Napi::Function::New(env, EncodeBatch, "encodeBatch"));
}

}  // namespace parley
