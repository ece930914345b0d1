// N-API bindings: TimeStretch (WSOLA) handles.
#include "handle.h"
#include "time_stretch.h"

namespace parley {
namespace {

// createTimeStretch(rateHz, maxInput, speed)
Napi::Value Create(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber() || !info[1].IsNumber() || !info[2].IsNumber())
    return ThrowType(env, "createTimeStretch(rateHz, maxInput, speed) takes numbers");
  const int rate = info[0].As<Napi::Number>().Int32Value();
  const int64_t maxInput = info[1].As<Napi::Number>().Int64Value();
  const double speed = info[2].As<Napi::Number>().DoubleValue();
  if (!TimeStretch::ValidRate(rate)) return ThrowRange(env, "time-stretch rate outside 4000..192000 Hz");
  if (maxInput <= 0 || maxInput > (1 << 22)) return ThrowRange(env, "maxInput out of range");
  if (!TimeStretch::ValidSpeed(speed)) return ThrowRange(env, "audio speed outside 0.5..2");
  return WrapHandle(env, Kind::TimeStretch, TimeStretch::Create(rate, static_cast<size_t>(maxInput), speed));
}

// timeStretchProcess(handle, input: Int16Array, out: Int16Array, length): stretches input[0, length).
Napi::Value Process(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TimeStretch* ts = UnwrapHandle<TimeStretch>(env, info[0], Kind::TimeStretch);
  if (ts == nullptr) return env.Undefined();
  View<int16_t> in = GetI16(env, info[1], "input must be an Int16Array");
  if (in.data == nullptr) return env.Undefined();
  View<int16_t> out = GetI16(env, info[2], "out must be an Int16Array");
  if (out.data == nullptr) return env.Undefined();
  if (!info[3].IsNumber()) return ThrowType(env, "length must be a number");
  const int64_t length = info[3].As<Napi::Number>().Int64Value();
  if (length < 0 || static_cast<size_t>(length) > in.length) return ThrowRange(env, "length outside the input");
  const size_t n = static_cast<size_t>(length);
  if (n > ts->max_input()) return ThrowRange(env, "time-stretch chunk longer than maxInput");
  if (out.length < ts->ProcessBound(n)) return ThrowRange(env, "out shorter than this chunk's output (size it with maxOutput)");
  size_t written = 0;
  if (!ts->Process(in.data, n, out.data, &written)) return ThrowRange(env, "time-stretch input overflow");
  return Napi::Number::New(env, static_cast<double>(written));
}

// timeStretchFlush(handle, out: Int16Array)
Napi::Value Flush(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TimeStretch* ts = UnwrapHandle<TimeStretch>(env, info[0], Kind::TimeStretch);
  if (ts == nullptr) return env.Undefined();
  View<int16_t> out = GetI16(env, info[1], "out must be an Int16Array");
  if (out.data == nullptr) return env.Undefined();
  if (out.length < ts->FlushBound()) return ThrowRange(env, "out shorter than the held output (size it with maxOutput)");
  size_t written = 0;
  if (!ts->Flush(out.data, &written)) return ThrowRange(env, "time-stretch input overflow");
  return Napi::Number::New(env, static_cast<double>(written));
}

Napi::Value SetSpeed(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TimeStretch* ts = UnwrapHandle<TimeStretch>(env, info[0], Kind::TimeStretch);
  if (ts == nullptr) return env.Undefined();
  if (!info[1].IsNumber()) return ThrowType(env, "speed must be a number");
  const double speed = info[1].As<Napi::Number>().DoubleValue();
  if (!TimeStretch::ValidSpeed(speed)) return ThrowRange(env, "audio speed outside 0.5..2");
  ts->SetSpeed(speed);
  return env.Undefined();
}

Napi::Value MaxOutput(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TimeStretch* ts = UnwrapHandle<TimeStretch>(env, info[0], Kind::TimeStretch);
  if (ts == nullptr) return env.Undefined();
  if (!info[1].IsNumber()) return ThrowType(env, "n must be a number");
  const int64_t n = info[1].As<Napi::Number>().Int64Value();
  if (n < 0) return ThrowRange(env, "n must be >= 0");
  return Napi::Number::New(env, static_cast<double>(ts->MaxOutput(static_cast<size_t>(n))));
}

Napi::Value Reset(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TimeStretch* ts = UnwrapHandle<TimeStretch>(env, info[0], Kind::TimeStretch);
  if (ts != nullptr) ts->Reset();
  return env.Undefined();
}

}  // namespace

void InitTimeStretch(Napi::Env env, Napi::Object exports) {
  exports.Set("createTimeStretch", Napi::Function::New(env, Create, "createTimeStretch"));
  exports.Set("timeStretchProcess", Napi::Function::New(env, Process, "timeStretchProcess"));
  exports.Set("timeStretchFlush", Napi::Function::New(env, Flush, "timeStretchFlush"));
  exports.Set("timeStretchSetSpeed", Napi::Function::New(env, SetSpeed, "timeStretchSetSpeed"));
  exports.Set("timeStretchMaxOutput", Napi::Function::New(env, MaxOutput, "timeStretchMaxOutput"));
  exports.Set("timeStretchReset", Napi::Function::New(env, Reset, "timeStretchReset"));
}

}  // namespace parley
