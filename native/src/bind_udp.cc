// N-API bindings: batched UDP endpoints (udp_io.h) driven by a uv_poll_t on the Node event loop.
//
// udpOpen(host, port, rxData: Uint8Array, rxMeta: Uint32Array, slotBytes, txData: Uint8Array, txMeta: Uint32Array,
//         onBatch: (count, error?) => void, rcvbufBytes = 0, sndbufBytes = 0) -> handle
//   The buffers are JavaScript's, kept alive by references until close. When the socket is readable the poll
//   callback drains it with recvmmsg into the ring and calls onBatch(count) once per batch; JavaScript must read
//   the packets before returning (the next batch reuses the ring). A receive error other than EAGAIN is passed as
//   onBatch(0, error) with error.code the errno name; an exception thrown by onBatch is re-raised as uncaught.
// udpSend(handle, count) -> sent           packets [0, count) of the tx table; EAGAIN drops the rest (counted)
// udpSendMany(handles[], counts: Uint32Array, sent: Uint32Array)   one crossing for many endpoints
// udpLocalPort(handle), udpStats(handle, out: Float64Array(5)), udpClose(handle)
// Errors are Error objects with code (errno name, e.g. 'EADDRINUSE'), errno (negative, as in libuv) and syscall.
#include <uv.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "handle.h"
#include "udp_io.h"

namespace parley {
namespace {

// Batches drained per readable event before yielding to the rest of the loop (fairness across endpoints).
constexpr int kMaxBatchesPerWake = 8;
constexpr uint32_t kEndpointTag = 0x55445031;  // "UDP1": type check of the External

Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall) {
  char message[160];
  std::snprintf(message, sizeof message, "%s %s: %s", syscall, uv_err_name(-err), std::strerror(err));
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, uv_err_name(-err)));
  e.Set("errno", Napi::Number::New(env, -err));
  e.Set("syscall", Napi::String::New(env, syscall));
  return e;
}

struct Endpoint {
  uint32_t tag = kEndpointTag;
  napi_env env = nullptr;
  UdpSocket socket;
  uv_poll_t* poll = nullptr;  // owned until its uv_close callback
  bool closed = false;
  bool in_callback = false;
  Napi::Reference<Napi::Uint8Array> rx_data, tx_data;
  Napi::Reference<Napi::Uint32Array> rx_meta, tx_meta;
  Napi::FunctionReference on_batch;

  void ReleaseReferences() {
    rx_data.Reset();
    tx_data.Reset();
    rx_meta.Reset();
    tx_meta.Reset();
    on_batch.Reset();
  }

  // Stops polling, closes the descriptor and hands the poll handle to uv_close. Safe to call twice, from onBatch,
  // from the environment's cleanup hook and from the finalizer.
  void Close() {
    if (closed) return;
    closed = true;
    if (poll != nullptr) {
      uv_poll_stop(poll);  // also invalidates the fd in the loop's backend, so closing it next is safe
      uv_close(reinterpret_cast<uv_handle_t*>(poll), [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
      poll = nullptr;
    }
    socket.Close();
    napi_remove_env_cleanup_hook(env, CleanupHook, this);
    if (!in_callback) ReleaseReferences();  // else after onBatch returns: it is running
  }

  static void CleanupHook(void* arg) { static_cast<Endpoint*>(arg)->Close(); }
};

void OnReadable(uv_poll_t* handle, int status, int events) {
  Endpoint* ep = static_cast<Endpoint*>(handle->data);
  if (ep->closed) return;
  Napi::Env env(ep->env);
  Napi::HandleScope scope(env);
  ep->in_callback = true;
  for (int b = 0; b < kMaxBatchesPerWake && !ep->closed; b++) {
    int n = status < 0 ? status : ep->socket.Receive();
    if (n == 0) break;
    napi_value args[2];
    args[0] = Napi::Number::New(env, n > 0 ? n : 0);
    args[1] = n > 0 ? env.Undefined() : ErrnoError(env, status < 0 ? -status : -n, status < 0 ? "poll" : "recvmmsg").Value();
    ep->on_batch.MakeCallback(env.Global(), 2, args);
    if (env.IsExceptionPending()) {
      Napi::Error err = env.GetAndClearPendingException();
      ep->in_callback = false;
      napi_fatal_exception(env, err.Value());
      if (ep->closed) ep->ReleaseReferences();
      return;
    }
    if (n < 0 || static_cast<uint32_t>(n) < ep->socket.slots()) break;  // drained (or failed)
  }
  ep->in_callback = false;
  if (ep->closed) ep->ReleaseReferences();
}

Endpoint* Unwrap(Napi::Env env, const Napi::Value& v, bool require_open) {
  if (!v.IsExternal()) {
    Napi::TypeError::New(env, "expected a native UDP handle").ThrowAsJavaScriptException();
    return nullptr;
  }
  Endpoint* ep = v.As<Napi::External<Endpoint>>().Data();
  if (ep == nullptr || ep->tag != kEndpointTag) {
    Napi::TypeError::New(env, "native handle of the wrong kind").ThrowAsJavaScriptException();
    return nullptr;
  }
  if (require_open && ep->closed) {
    ErrnoError(env, EBADF, "udp (closed)").ThrowAsJavaScriptException();
    return nullptr;
  }
  return ep;
}

Napi::Value Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString() || !info[1].IsNumber() || !info[4].IsNumber() || !info[7].IsFunction())
    return ThrowType(env, "udpOpen(host, port, rxData, rxMeta, slotBytes, txData, txMeta, onBatch)");
  std::string host = info[0].As<Napi::String>().Utf8Value();
  double port = info[1].As<Napi::Number>().DoubleValue();
  double slot_bytes = info[4].As<Napi::Number>().DoubleValue();
  View<uint8_t> rx_data = GetU8(env, info[2], "rxData must be a Uint8Array");
  if (rx_data.data == nullptr) return env.Undefined();
  View<uint32_t> rx_meta = GetArray<uint32_t>(env, info[3], napi_uint32_array, "rxMeta must be a Uint32Array");
  if (rx_meta.data == nullptr) return env.Undefined();
  View<uint8_t> tx_data = GetU8(env, info[5], "txData must be a Uint8Array");
  if (tx_data.data == nullptr) return env.Undefined();
  View<uint32_t> tx_meta = GetArray<uint32_t>(env, info[6], napi_uint32_array, "txMeta must be a Uint32Array");
  if (tx_meta.data == nullptr) return env.Undefined();
  if (!(port >= 0 && port <= 65535) || port != static_cast<int>(port)) return ThrowRange(env, "port must be 0..65535");
  if (!(slot_bytes >= 1 && slot_bytes <= 65536) || slot_bytes != static_cast<int>(slot_bytes))
    return ThrowRange(env, "slotBytes must be 1..65536");
  size_t slots = rx_meta.length / kUdpMetaWords;
  size_t tx_slots = tx_meta.length / kUdpMetaWords;
  int bufs[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    if (info[8 + i].IsUndefined()) continue;
    double v = info[8 + i].IsNumber() ? info[8 + i].As<Napi::Number>().DoubleValue() : -1;
    if (!(v >= 0 && v <= (1 << 30))) return ThrowRange(env, "socket buffer sizes must be 0..2^30 bytes");
    bufs[i] = static_cast<int>(v);
  }
  if (slots == 0 || slots > kUdpMaxBatch || rx_meta.length % kUdpMetaWords != 0)
    return ThrowRange(env, "rxMeta must hold 4 words per slot, 1..1024 slots");
  if (rx_data.length < slots * static_cast<size_t>(slot_bytes)) return ThrowRange(env, "rxData must hold slots x slotBytes");
  if (tx_slots == 0 || tx_slots > kUdpMaxBatch || tx_meta.length % kUdpMetaWords != 0)
    return ThrowRange(env, "txMeta must hold 4 words per packet, 1..1024 packets");

  Endpoint* ep = new Endpoint();
  ep->env = env;
  int err = ep->socket.Open(host.c_str(), static_cast<uint16_t>(port), bufs[0], bufs[1], rx_data.data, rx_meta.data,
                            static_cast<uint32_t>(slots), static_cast<uint32_t>(slot_bytes), tx_data.data, tx_data.length,
                            tx_meta.data, static_cast<uint32_t>(tx_slots));
  if (err != 0) {
    delete ep;
    ErrnoError(env, err, err == EINVAL ? "inet_pton" : "socket").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) {
    delete ep;
    Napi::Error::New(env, "no libuv loop for this environment").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  ep->poll = new uv_poll_t;
  int rc = uv_poll_init(loop, ep->poll, ep->socket.fd());
  if (rc != 0) {
    delete ep->poll;  // never initialised: not known to the loop
    ep->poll = nullptr;
  } else if ((rc = uv_poll_start(ep->poll, UV_READABLE, OnReadable)) != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(ep->poll), [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
    ep->poll = nullptr;
  }
  if (rc != 0) {
    delete ep;
    ErrnoError(env, -rc, "uv_poll_start").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  ep->poll->data = ep;
  ep->rx_data = Napi::Persistent(info[2].As<Napi::Uint8Array>());
  ep->rx_meta = Napi::Persistent(info[3].As<Napi::Uint32Array>());
  ep->tx_data = Napi::Persistent(info[5].As<Napi::Uint8Array>());
  ep->tx_meta = Napi::Persistent(info[6].As<Napi::Uint32Array>());
  ep->on_batch = Napi::Persistent(info[7].As<Napi::Function>());
  napi_add_env_cleanup_hook(env, Endpoint::CleanupHook, ep);
  return Napi::External<Endpoint>::New(env, ep, [](Napi::Env, Endpoint* e) {
    e->Close();
    delete e;
  });
}

// Sends one endpoint's table; returns the count sent or -1 with a pending exception.
int SendOne(Napi::Env env, Endpoint* ep, double count_value) {
  if (!(count_value >= 0) || count_value != static_cast<uint32_t>(count_value)) {
    ThrowRange(env, "count must be a non-negative integer");
    return -1;
  }
  uint32_t count = static_cast<uint32_t>(count_value);
  const char* bad = ep->socket.CheckTx(count);
  if (bad != nullptr) {
    ThrowRange(env, bad);
    return -1;
  }
  uint32_t failed = 0;
  int n = ep->socket.Send(count, &failed);
  if (n < 0) {
    Napi::Error e = ErrnoError(env, -n, "sendmmsg");
    e.Set("index", Napi::Number::New(env, failed));
    e.ThrowAsJavaScriptException();
    return -1;
  }
  return n;
}

Napi::Value Send(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Endpoint* ep = Unwrap(env, info[0], true);
  if (ep == nullptr) return env.Undefined();
  if (!info[1].IsNumber()) return ThrowType(env, "udpSend(handle, count)");
  int n = SendOne(env, ep, info[1].As<Napi::Number>().DoubleValue());
  return n < 0 ? env.Undefined() : Napi::Number::New(env, n);
}

// udpSendMany(handles, counts, sent): on an error, sent[] holds what went out so far and the error names the
// endpoint (`handleIndex`) besides the packet (`index`).
Napi::Value SendMany(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) return ThrowType(env, "udpSendMany(handles: array, counts: Uint32Array, sent: Uint32Array)");
  Napi::Array handles = info[0].As<Napi::Array>();
  View<uint32_t> counts = GetArray<uint32_t>(env, info[1], napi_uint32_array, "counts must be a Uint32Array");
  if (counts.data == nullptr) return env.Undefined();
  View<uint32_t> sent = GetArray<uint32_t>(env, info[2], napi_uint32_array, "sent must be a Uint32Array");
  if (sent.data == nullptr) return env.Undefined();
  uint32_t n = handles.Length();
  if (counts.length < n || sent.length < n) return ThrowRange(env, "counts and sent must hold one entry per handle");
  for (uint32_t i = 0; i < n; i++) sent.data[i] = 0;
  for (uint32_t i = 0; i < n; i++) {
    Endpoint* ep = Unwrap(env, handles.Get(i), true);
    if (ep == nullptr) return env.Undefined();
    int r = SendOne(env, ep, counts.data[i]);
    if (r < 0) {
      Napi::Error e = env.GetAndClearPendingException();
      e.Set("handleIndex", Napi::Number::New(env, i));
      e.ThrowAsJavaScriptException();
      return env.Undefined();
    }
    sent.data[i] = static_cast<uint32_t>(r);
  }
  return env.Undefined();
}

Napi::Value LocalPort(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Endpoint* ep = Unwrap(env, info[0], false);
  if (ep == nullptr) return env.Undefined();
  return Napi::Number::New(env, ep->socket.local_port());
}

// udpStats(handle, out: Float64Array(5)): [rxPackets, rxBatches, rxTruncated, txPackets, txDropped]
Napi::Value Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Endpoint* ep = Unwrap(env, info[0], false);
  if (ep == nullptr) return env.Undefined();
  View<double> out = GetF64(env, info[1], "out must be a Float64Array");
  if (out.data == nullptr) return env.Undefined();
  if (out.length < 5) return ThrowRange(env, "out must hold 5 values");
  const UdpCounters& c = ep->socket.counters();
  out.data[0] = c.rx_packets;
  out.data[1] = c.rx_batches;
  out.data[2] = c.rx_truncated;
  out.data[3] = c.tx_packets;
  out.data[4] = c.tx_dropped;
  return env.Undefined();
}

Napi::Value Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Endpoint* ep = Unwrap(env, info[0], false);
  if (ep == nullptr) return env.Undefined();
  ep->Close();
  return env.Undefined();
}

}  // namespace

void InitUdp(Napi::Env env, Napi::Object exports) {
  exports.Set("udpOpen", Napi::Function::New(env, Open));
  exports.Set("udpSend", Napi::Function::New(env, Send));
  exports.Set("udpSendMany", Napi::Function::New(env, SendMany));
  exports.Set("udpLocalPort", Napi::Function::New(env, LocalPort));
  exports.Set("udpStats", Napi::Function::New(env, Stats));
  exports.Set("udpClose", Napi::Function::New(env, Close));
}

}  // namespace parley
