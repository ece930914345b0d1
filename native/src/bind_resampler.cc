// N-API bindings: Resampler handles and the batched outbound calls (resample, resample + G.711 encode).
#include <algorithm>
#include <memory>
#include <vector>

#include "g711.h"
#include "handle.h"
#include "resampler.h"

namespace parley {
namespace {

Napi::Value Create(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber() || !info[1].IsNumber() || !info[2].IsNumber())
    return ThrowType(env, "createResampler(fromHz, toHz, maxFrame) takes numbers");
  int from = info[0].As<Napi::Number>().Int32Value();
  int to = info[1].As<Napi::Number>().Int32Value();
  int64_t maxFrame = info[2].As<Napi::Number>().Int64Value();
  if (maxFrame <= 0 || maxFrame > (1 << 22)) return ThrowRange(env, "maxFrame out of range");
  Resampler* r = Resampler::Create(from, to, static_cast<size_t>(maxFrame));
  if (r == nullptr) return ThrowRange(env, "unsupported sample rate (8000, 16000, 22050, 24000, 44100, 48000)");
  return WrapHandle(env, Kind::Resampler, r);
}

// Checks one stream's input/output against the resampler's limits; false means an exception is pending.
bool CheckSizes(Napi::Env env, const Resampler* r, size_t in, size_t out) {
  if (in > r->max_frame()) {
    Napi::RangeError::New(env, "input longer than the resampler's maxFrame").ThrowAsJavaScriptException();
    return false;
  }
  if (out < r->MaxOutput(in)) {
    Napi::RangeError::New(env, "output shorter than maxOutput(input length)").ThrowAsJavaScriptException();
    return false;
  }
  return true;
}

Napi::Value Process(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Resampler* r = UnwrapHandle<Resampler>(env, info[0], Kind::Resampler);
  if (r == nullptr) return env.Undefined();
  View<int16_t> in = GetI16(env, info[1], "input must be an Int16Array");
  if (in.data == nullptr) return env.Undefined();
  View<int16_t> out = GetI16(env, info[2], "out must be an Int16Array");
  if (out.data == nullptr) return env.Undefined();
  if (!CheckSizes(env, r, in.length, out.length)) return env.Undefined();
  return Napi::Number::New(env, static_cast<double>(r->Process(in.data, in.length, out.data)));
}

Napi::Value MaxOutput(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Resampler* r = UnwrapHandle<Resampler>(env, info[0], Kind::Resampler);
  if (r == nullptr) return env.Undefined();
  if (!info[1].IsNumber()) return ThrowType(env, "n must be a number");
  int64_t n = info[1].As<Napi::Number>().Int64Value();
  if (n < 0) return ThrowRange(env, "n must be >= 0");
  return Napi::Number::New(env, static_cast<double>(r->MaxOutput(static_cast<size_t>(n))));
}

Napi::Value Delay(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Resampler* r = UnwrapHandle<Resampler>(env, info[0], Kind::Resampler);
  if (r == nullptr) return env.Undefined();
  return Napi::Number::New(env, r->delay());
}

Napi::Value Reset(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Resampler* r = UnwrapHandle<Resampler>(env, info[0], Kind::Resampler);
  if (r != nullptr) r->Reset();
  return env.Undefined();
}

// resampleBatch(handles[], inputs: Int16Array[], outs: Int16Array[], written: Int32Array): resamples every
// stream in one crossing; written[i] receives stream i's output count.
Napi::Value Batch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray() || !info[1].IsArray() || !info[2].IsArray())
    return ThrowType(env, "handles, inputs and outs must be arrays");
  Napi::Array handles = info[0].As<Napi::Array>();
  Napi::Array inputs = info[1].As<Napi::Array>();
  Napi::Array outs = info[2].As<Napi::Array>();
  View<int32_t> written = GetI32(env, info[3], "written must be an Int32Array");
  if (written.data == nullptr) return env.Undefined();
  uint32_t count = handles.Length();
  if (inputs.Length() != count || outs.Length() != count || written.length < count)
    return ThrowRange(env, "handles, inputs, outs and written differ in length");
  for (uint32_t i = 0; i < count; i++) {
    Resampler* r = UnwrapHandle<Resampler>(env, handles.Get(i), Kind::Resampler);
    if (r == nullptr) return env.Undefined();
    View<int16_t> in = GetI16(env, inputs.Get(i), "inputs[i] must be an Int16Array");
    if (in.data == nullptr) return env.Undefined();
    View<int16_t> out = GetI16(env, outs.Get(i), "outs[i] must be an Int16Array");
    if (out.data == nullptr) return env.Undefined();
    if (!CheckSizes(env, r, in.length, out.length)) return env.Undefined();
    written.data[i] = static_cast<int32_t>(r->Process(in.data, in.length, out.data));
  }
  return env.Undefined();
}

// resampleEncodeBatch(codec, handles[], inputs: Int16Array[], scratch: Int16Array, outs: Uint8Array[],
// written: Int32Array): the outbound tail of every stream (resample to the wire rate, then G.711) in one
// crossing. scratch holds one stream's resampled PCM at a time; written[i] receives the bytes of outs[i].
Napi::Value ResampleEncodeBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) return ThrowType(env, "codec must be a number");
  int32_t codec = info[0].As<Napi::Number>().Int32Value();
  if (codec != 0 && codec != 1) return ThrowRange(env, "unknown codec");
  if (!info[1].IsArray() || !info[2].IsArray() || !info[4].IsArray())
    return ThrowType(env, "handles, inputs and outs must be arrays");
  Napi::Array handles = info[1].As<Napi::Array>();
  Napi::Array inputs = info[2].As<Napi::Array>();
  View<int16_t> scratch = GetI16(env, info[3], "scratch must be an Int16Array");
  if (scratch.data == nullptr) return env.Undefined();
  Napi::Array outs = info[4].As<Napi::Array>();
  View<int32_t> written = GetI32(env, info[5], "written must be an Int32Array");
  if (written.data == nullptr) return env.Undefined();
  uint32_t count = handles.Length();
  if (inputs.Length() != count || outs.Length() != count || written.length < count)
    return ThrowRange(env, "handles, inputs, outs and written differ in length");
  for (uint32_t i = 0; i < count; i++) {
    Resampler* r = UnwrapHandle<Resampler>(env, handles.Get(i), Kind::Resampler);
    if (r == nullptr) return env.Undefined();
    View<int16_t> in = GetI16(env, inputs.Get(i), "inputs[i] must be an Int16Array");
    if (in.data == nullptr) return env.Undefined();
    View<uint8_t> out = GetU8(env, outs.Get(i), "outs[i] must be a Uint8Array");
    if (out.data == nullptr) return env.Undefined();
    if (!CheckSizes(env, r, in.length, scratch.length)) return env.Undefined();
    size_t n = r->Process(in.data, in.length, scratch.data);
    if (out.length < n) return ThrowRange(env, "outs[i] shorter than the resampled frame");
    if (codec == 0)
      MulawEncode(scratch.data, out.data, n);
    else
      AlawEncode(scratch.data, out.data, n);
    written.data[i] = static_cast<int32_t>(n);
  }
  return env.Undefined();
}

// A fixed set of outbound streams (resampler, engine-rate frame, packet payload) registered once, when streams
// join or leave, and run every tick with no per-stream N-API work: the frames and payloads are read and written
// in place through pointers taken at create, the arrays and handles kept alive by references until destroy.
// (Typed arrays of this size live outside the JS heap and never move; the outbound buffers are never detached.)
class ResampleEncodeGroup : public Module {
 public:
  struct Entry {
    Box* resampler;  // checked at each run: destroying a member resampler makes run() throw
    const int16_t* in;
    size_t in_length;
    uint8_t* out;
    size_t out_length;
  };

  ResampleEncodeGroup(napi_env env, int32_t codec) : env_(env), codec_(codec) {}
  ~ResampleEncodeGroup() override {
    for (napi_ref ref : refs_) napi_delete_reference(env_, ref);
  }

  bool Keep(napi_value value) {
    napi_ref ref;
    if (napi_create_reference(env_, value, 1, &ref) != napi_ok) return false;
    refs_.push_back(ref);
    return true;
  }

  std::vector<Entry> entries;
  std::vector<int16_t> scratch;
  int32_t codec() const { return codec_; }

 private:
  napi_env env_;
  int32_t codec_;
  std::vector<napi_ref> refs_;
};

// createResampleEncodeGroup(codec, handles[], inputs: Int16Array[], outs: Uint8Array[]): sizes checked here,
// once.
Napi::Value CreateGroup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) return ThrowType(env, "codec must be a number");
  int32_t codec = info[0].As<Napi::Number>().Int32Value();
  if (codec != 0 && codec != 1) return ThrowRange(env, "unknown codec");
  if (!info[1].IsArray() || !info[2].IsArray() || !info[3].IsArray())
    return ThrowType(env, "handles, inputs and outs must be arrays");
  Napi::Array handles = info[1].As<Napi::Array>();
  Napi::Array inputs = info[2].As<Napi::Array>();
  Napi::Array outs = info[3].As<Napi::Array>();
  uint32_t count = handles.Length();
  if (inputs.Length() != count || outs.Length() != count) return ThrowRange(env, "handles, inputs and outs differ in length");
  auto group = std::make_unique<ResampleEncodeGroup>(env, codec);
  group->entries.reserve(count);
  size_t scratch = 0;
  for (uint32_t i = 0; i < count; i++) {
    Napi::Value handle = handles.Get(i);
    Box* box = BoxOf(env, handle, Kind::Resampler);
    if (box == nullptr) return env.Undefined();
    const Resampler* r = static_cast<const Resampler*>(box->Get().ptr);
    if (r == nullptr) return ThrowRange(env, "a resampler of the group is destroyed");
    Napi::Value inValue = inputs.Get(i);
    View<int16_t> in = GetI16(env, inValue, "inputs[i] must be an Int16Array");
    if (in.data == nullptr) return env.Undefined();
    Napi::Value outValue = outs.Get(i);
    View<uint8_t> out = GetU8(env, outValue, "outs[i] must be a Uint8Array");
    if (out.data == nullptr) return env.Undefined();
    if (in.length > r->max_frame()) return ThrowRange(env, "input longer than the resampler's maxFrame");
    if (!group->Keep(handle) || !group->Keep(inValue) || !group->Keep(outValue))
      return ThrowRange(env, "cannot keep a reference");
    group->entries.push_back({box, in.data, in.length, out.data, out.length});
    scratch = std::max(scratch, r->MaxOutput(in.length));
  }
  group->scratch.assign(scratch, 0);
  return WrapHandle(env, Kind::ResampleEncodeGroup, group.release());
}

// resampleEncodeGroupRun(group, written: Int32Array): every member's frame resampled and G.711-encoded into its
// payload; written[i] = bytes.
Napi::Value RunGroup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ResampleEncodeGroup* g = UnwrapHandle<ResampleEncodeGroup>(env, info[0], Kind::ResampleEncodeGroup);
  if (g == nullptr) return env.Undefined();
  View<int32_t> written = GetI32(env, info[1], "written must be an Int32Array");
  if (written.data == nullptr) return env.Undefined();
  const size_t count = g->entries.size();
  if (written.length < count) return ThrowRange(env, "written is shorter than the group");
  int16_t* scratch = g->scratch.data();
  const bool mulaw = g->codec() == 0;
  for (size_t i = 0; i < count; i++) {
    const ResampleEncodeGroup::Entry& e = g->entries[i];
    Resampler* r = static_cast<Resampler*>(e.resampler->Get().ptr);
    if (r == nullptr) return ThrowRange(env, "a resampler of the group was destroyed");
    size_t n = r->Process(e.in, e.in_length, scratch);
    if (n > e.out_length) return ThrowRange(env, "outs[i] shorter than the resampled frame");
    if (mulaw)
      MulawEncode(scratch, e.out, n);
    else
      AlawEncode(scratch, e.out, n);
    written.data[i] = static_cast<int32_t>(n);
  }
  return env.Undefined();
}

Napi::Value Destroy(const Napi::CallbackInfo& info) {
  DestroyHandle(info.Env(), info[0]);
  return info.Env().Undefined();
}

}  // namespace

void InitResampler(Napi::Env env, Napi::Object exports) {
  exports.Set("createResampler", Napi::Function::New(env, Create, "createResampler"));
  exports.Set("resamplerProcess", Napi::Function::New(env, Process, "resamplerProcess"));
  exports.Set("resamplerMaxOutput", Napi::Function::New(env, MaxOutput, "resamplerMaxOutput"));
  exports.Set("resamplerDelay", Napi::Function::New(env, Delay, "resamplerDelay"));
  exports.Set("resamplerReset", Napi::Function::New(env, Reset, "resamplerReset"));
  exports.Set("resampleBatch", Napi::Function::New(env, Batch, "resampleBatch"));
  exports.Set("resampleEncodeBatch", Napi::Function::New(env, ResampleEncodeBatch, "resampleEncodeBatch"));
  exports.Set("createResampleEncodeGroup", Napi::Function::New(env, CreateGroup, "createResampleEncodeGroup"));
  exports.Set("resampleEncodeGroupRun", Napi::Function::New(env, RunGroup, "resampleEncodeGroupRun"));
  exports.Set("destroy", Napi::Function::New(env, Destroy, "destroy"));
}

}  // namespace parley
