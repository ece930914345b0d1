// Module entry: registers each DSP module's bindings.
#include "handle.h"
#include "time_stretch.h"
#include "udp_io.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  parley::InitHandles(env, exports);
  parley::InitG711(env, exports);
  parley::InitResampler(env, exports);
  parley::InitVad(env, exports);
  parley::InitDetectors(env, exports);
  parley::InitUdp(env, exports);
  parley::InitTimeStretch(env, exports);
  parley::InitBlockWriter(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(parley_dsp, Init)
