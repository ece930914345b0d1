// Module entry: registers each DSP module's bindings. The UDP endpoints (recvmmsg, sendmmsg, io_uring, eventfd)
// exist on Linux only: elsewhere binding.gyp leaves their sources out and the addon exports no udp* function.
#include "handle.h"
#include "time_stretch.h"
#ifdef __linux__
#include "udp_io.h"
#endif

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  parley::InitHandles(env, exports);
  parley::InitG711(env, exports);
  parley::InitResampler(env, exports);
  parley::InitVad(env, exports);
  parley::InitDetectors(env, exports);
#ifdef __linux__
  parley::InitUdp(env, exports);
#endif
  parley::InitTimeStretch(env, exports);
  parley::InitBlockWriter(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(parley_dsp, Init)
