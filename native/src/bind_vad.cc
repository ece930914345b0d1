// N-API bindings: Vad handles.
#include "handle.h"
#include "vad.h"

namespace parley {
namespace {

// The options from info[first..first + 3]: threshold, prebufferMs, minSpeechMs, minSilenceMs (numbers: checked by
// the caller).
VadOptions OptionsFrom(const Napi::CallbackInfo& info, size_t first) {
  VadOptions o;
  o.threshold = info[first].As<Napi::Number>().FloatValue();
  o.prebuffer_ms = info[first + 1].As<Napi::Number>().Int32Value();
  o.min_speech_ms = info[first + 2].As<Napi::Number>().Int32Value();
  o.min_silence_ms = info[first + 3].As<Napi::Number>().Int32Value();
  return o;
}

// createVad(rateHz, threshold, prebufferMs, minSpeechMs, minSilenceMs)
Napi::Value Create(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  for (size_t i = 0; i < 5; i++)
    if (!info[i].IsNumber()) return ThrowType(env, "createVad(rateHz, threshold, prebufferMs, minSpeechMs, minSilenceMs) takes numbers");
  int rate = info[0].As<Napi::Number>().Int32Value();
  Vad* vad = Vad::Create(rate, OptionsFrom(info, 1));
  if (vad == nullptr) return ThrowRange(env, "unsupported VAD rate or options out of range");
  return WrapHandle(env, Kind::Vad, vad);
}

// vadProcess(handle, frame) -> event bits: the per-frame call, on the C API directly (one napi_get_cb_info for
// exactly the two arguments, no Napi::CallbackInfo) and answered with a small integer (napi_create_int32: no
// heap number).
napi_value Process(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok) return nullptr;
  // Missing arguments arrive as undefined and fail the checks below.
  Vad* vad = UnwrapHandle<Vad>(env, Napi::Value(env, argv[0]), Kind::Vad);
  if (vad == nullptr) return nullptr;
  View<int16_t> in = GetI16(env, Napi::Value(env, argv[1]), "frame must be an Int16Array");
  if (in.data == nullptr) return nullptr;
  napi_value events;
  if (napi_create_int32(env, vad->Process(in.data, in.length), &events) != napi_ok) return nullptr;
  return events;
}

// vadInfo(handle, out: Float64Array(5)): [probability, speechStartSample, lastVoicedSample, samplesSeen, speaking]
Napi::Value Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Vad* vad = UnwrapHandle<Vad>(env, info[0], Kind::Vad);
  if (vad == nullptr) return env.Undefined();
  View<double> out = GetF64(env, info[1], "out must be a Float64Array");
  if (out.data == nullptr) return env.Undefined();
  if (out.length < 5) return ThrowRange(env, "out must hold 5 values");
  out.data[0] = vad->probability();
  out.data[1] = static_cast<double>(vad->speech_start_sample());
  out.data[2] = static_cast<double>(vad->last_voiced_sample());
  out.data[3] = static_cast<double>(vad->samples_seen());
  out.data[4] = vad->speaking() ? 1 : 0;
  return env.Undefined();
}

Napi::Value ReadPrebuffer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Vad* vad = UnwrapHandle<Vad>(env, info[0], Kind::Vad);
  if (vad == nullptr) return env.Undefined();
  View<int16_t> out = GetI16(env, info[1], "out must be an Int16Array");
  if (out.data == nullptr) return env.Undefined();
  return Napi::Number::New(env, static_cast<double>(vad->ReadPrebuffer(out.data, out.length)));
}

Napi::Value PrebufferCapacity(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Vad* vad = UnwrapHandle<Vad>(env, info[0], Kind::Vad);
  if (vad == nullptr) return env.Undefined();
  return Napi::Number::New(env, static_cast<double>(vad->prebuffer_capacity()));
}

// vadSetOptions(handle, threshold, prebufferMs, minSpeechMs, minSilenceMs): new options for a running VAD (a
// transfer to another agent), its learnt state kept; not a per-frame call (it may reallocate the prebuffer).
Napi::Value SetOptions(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Vad* vad = UnwrapHandle<Vad>(env, info[0], Kind::Vad);
  if (vad == nullptr) return env.Undefined();
  for (size_t i = 1; i < 5; i++)
    if (!info[i].IsNumber()) return ThrowType(env, "vadSetOptions(handle, threshold, prebufferMs, minSpeechMs, minSilenceMs) takes numbers");
  if (!vad->SetOptions(OptionsFrom(info, 1))) return ThrowRange(env, "VAD options out of range");
  return env.Undefined();
}

Napi::Value Reset(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Vad* vad = UnwrapHandle<Vad>(env, info[0], Kind::Vad);
  if (vad != nullptr) vad->Reset();
  return env.Undefined();
}

// vadLimits: the maxima of the options createVad and vadSetOptions accept (each option's minimum is 0), a frozen
// object built once at load.
Napi::Object Limits(Napi::Env env) {
  Napi::Object limits = Napi::Object::New(env);
  limits.Set("maxThreshold", Napi::Number::New(env, Vad::kMaxThreshold));
  limits.Set("maxPrebufferMs", Napi::Number::New(env, Vad::kMaxPrebufferMs));
  limits.Set("maxMinSpeechMs", Napi::Number::New(env, Vad::kMaxMinSpeechMs));
  limits.Set("maxMinSilenceMs", Napi::Number::New(env, Vad::kMaxMinSilenceMs));
  limits.Freeze();
  return limits;
}

}  // namespace

void InitVad(Napi::Env env, Napi::Object exports) {
  exports.Set("vadLimits", Limits(env));
  exports.Set("createVad", Napi::Function::New(env, Create, "createVad"));
  napi_value process;
  if (napi_create_function(env, "vadProcess", NAPI_AUTO_LENGTH, Process, nullptr, &process) != napi_ok) {
    Napi::Error::New(env, "cannot create vadProcess").ThrowAsJavaScriptException();
    return;
  }
  exports.Set("vadProcess", Napi::Value(env, process));
  exports.Set("vadInfo", Napi::Function::New(env, Info, "vadInfo"));
  exports.Set("vadReadPrebuffer", Napi::Function::New(env, ReadPrebuffer, "vadReadPrebuffer"));
  exports.Set("vadPrebufferCapacity", Napi::Function::New(env, PrebufferCapacity, "vadPrebufferCapacity"));
  exports.Set("vadSetOptions", Napi::Function::New(env, SetOptions, "vadSetOptions"));
  exports.Set("vadReset", Napi::Function::New(env, Reset, "vadReset"));
}

}  // namespace parley
