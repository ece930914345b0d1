// N-API bindings: DTMF and single-tone (beep) detector handles.
#include "dtmf.h"
#include "handle.h"
#include "tone.h"

namespace parley {
namespace {

Napi::Value CreateDtmf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) return ThrowType(env, "createDtmf(rateHz) takes a number");
  DtmfDetector* d = DtmfDetector::Create(info[0].As<Napi::Number>().Int32Value());
  if (d == nullptr) return ThrowRange(env, "unsupported DTMF detector rate");
  return WrapHandle(env, Kind::Dtmf, d);
}

// dtmfProcess(handle, frame: Int16Array, out: Uint8Array) -> digits written to out (ASCII)
Napi::Value DtmfProcess(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DtmfDetector* d = UnwrapHandle<DtmfDetector>(env, info[0], Kind::Dtmf);
  if (d == nullptr) return env.Undefined();
  View<int16_t> in = GetI16(env, info[1], "frame must be an Int16Array");
  if (in.data == nullptr) return env.Undefined();
  View<uint8_t> out = GetU8(env, info[2], "out must be a Uint8Array");
  if (out.data == nullptr) return env.Undefined();
  if (out.length == 0) return ThrowRange(env, "out must hold at least one digit");
  return Napi::Number::New(env, static_cast<double>(d->Process(in.data, in.length, out.data, out.length)));
}

Napi::Value DtmfReset(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DtmfDetector* d = UnwrapHandle<DtmfDetector>(env, info[0], Kind::Dtmf);
  if (d != nullptr) d->Reset();
  return env.Undefined();
}

// createTone(rateHz, minHz, maxHz, minDurationMs)
Napi::Value CreateTone(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  for (size_t i = 0; i < 4; i++)
    if (!info[i].IsNumber()) return ThrowType(env, "createTone(rateHz, minHz, maxHz, minDurationMs) takes numbers");
  ToneOptions o;
  o.min_hz = info[1].As<Napi::Number>().FloatValue();
  o.max_hz = info[2].As<Napi::Number>().FloatValue();
  o.min_duration_ms = info[3].As<Napi::Number>().Int32Value();
  ToneDetector* t = ToneDetector::Create(info[0].As<Napi::Number>().Int32Value(), o);
  if (t == nullptr) return ThrowRange(env, "unsupported tone detector rate or options out of range");
  return WrapHandle(env, Kind::Tone, t);
}

Napi::Value ToneProcess(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ToneDetector* t = UnwrapHandle<ToneDetector>(env, info[0], Kind::Tone);
  if (t == nullptr) return env.Undefined();
  View<int16_t> in = GetI16(env, info[1], "frame must be an Int16Array");
  if (in.data == nullptr) return env.Undefined();
  return Napi::Number::New(env, t->Process(in.data, in.length));
}

// toneInfo(handle, out: Float64Array(3)): [frequencyHz, startSample, endSample]
Napi::Value ToneInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ToneDetector* t = UnwrapHandle<ToneDetector>(env, info[0], Kind::Tone);
  if (t == nullptr) return env.Undefined();
  View<double> out = GetF64(env, info[1], "out must be a Float64Array");
  if (out.data == nullptr) return env.Undefined();
  if (out.length < 3) return ThrowRange(env, "out must hold 3 values");
  out.data[0] = t->frequency();
  out.data[1] = static_cast<double>(t->start_sample());
  out.data[2] = static_cast<double>(t->end_sample());
  return env.Undefined();
}

Napi::Value ToneReset(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ToneDetector* t = UnwrapHandle<ToneDetector>(env, info[0], Kind::Tone);
  if (t != nullptr) t->Reset();
  return env.Undefined();
}

}  // namespace

void InitDetectors(Napi::Env env, Napi::Object exports) {
  exports.Set("createDtmf", Napi::Function::New(env, CreateDtmf, "createDtmf"));
  exports.Set("dtmfProcess", Napi::Function::New(env, DtmfProcess, "dtmfProcess"));
  exports.Set("dtmfReset", Napi::Function::New(env, DtmfReset, "dtmfReset"));
  exports.Set("createTone", Napi::Function::New(env, CreateTone, "createTone"));
  exports.Set("toneProcess", Napi::Function::New(env, ToneProcess, "toneProcess"));
  exports.Set("toneInfo", Napi::Function::New(env, ToneInfo, "toneInfo"));
  exports.Set("toneReset", Napi::Function::New(env, ToneReset, "toneReset"));
}

}  // namespace parley
