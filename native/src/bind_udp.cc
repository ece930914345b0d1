// N-API bindings: batched UDP endpoints (udp_io.h) driven by a uv_poll_t on the Node event loop.
//
// udpOpen(host, port, rxData: Uint8Array, rxMeta: Uint32Array, slotBytes, txData: Uint8Array, txMeta: Uint32Array,
//         onBatch: (count, error?) => void, rcvbufBytes = 0, sndbufBytes = 0) -> handle
//   The buffers are JavaScript's, kept alive by references until close. When the socket is readable the poll
//   callback drains it with recvmmsg into the ring and calls onBatch(count) once per batch; JavaScript must read
//   the packets before returning (the next batch reuses the ring). A receive error other than EAGAIN is passed as
//   onBatch(0, error) with error.code the errno name; an exception thrown by onBatch is re-raised as uncaught.
// udpGroupCreate(ready: Uint32Array, onReady: (n) => void) -> group
//   Per-worker receive dispatch for many low-rate sockets: an endpoint opened with a group (udpOpen's onBatch
//   argument replaced by the group and an id) receives one batch per readable event into its ring and appends
//   [id, count, errno] to `ready`; after the loop's poll phase a uv_check_t calls onReady(n) ONCE for all
//   endpoints that received. At 50 packets/s per call a socket mostly holds one packet per wake, so this replaces
//   one JS callback per packet with one per loop iteration. Capacity: ready.length / 3 endpoints.
// udpGroupClose(group): stops the dispatch; its endpoints stop polling.
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

constexpr uint32_t kGroupTag = 0x55445047;  // "UDPG"
constexpr size_t kGroupWords = 3;           // [id, count, errno] per ready entry

struct Group {
  uint32_t tag = kGroupTag;
  napi_env env = nullptr;
  uv_check_t* check = nullptr;  // owned until its uv_close callback
  uint32_t* ready = nullptr;
  uint32_t capacity = 0;
  uint32_t count = 0;
  uint32_t members = 0;
  uint64_t generation = 1;  // advanced by each check callback: one ready entry per endpoint per generation
  bool closed = false;
  bool in_callback = false;
  Napi::Reference<Napi::Uint32Array> ready_ref;
  Napi::FunctionReference on_ready;

  void Close() {
    if (closed) return;
    closed = true;
    uv_check_stop(check);
    uv_close(reinterpret_cast<uv_handle_t*>(check), [](uv_handle_t* h) { delete reinterpret_cast<uv_check_t*>(h); });
    check = nullptr;
    napi_remove_env_cleanup_hook(env, CleanupHook, this);
    if (!in_callback) {
      ready_ref.Reset();
      on_ready.Reset();
    }
  }
  static void CleanupHook(void* arg) { static_cast<Group*>(arg)->Close(); }
};

struct Endpoint {
  uint32_t tag = kEndpointTag;
  Group* group = nullptr;  // kept alive by group_ref
  uint32_t id = 0;
  uint64_t queued_generation = 0;
  Napi::ObjectReference group_ref;
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
    group_ref.Reset();
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
    if (group != nullptr) group->members--;
    napi_remove_env_cleanup_hook(env, CleanupHook, this);
    if (!in_callback) ReleaseReferences();  // else after onBatch returns: it is running
  }

  static void CleanupHook(void* arg) { static_cast<Endpoint*>(arg)->Close(); }
};

// Group mode: one batch into the ring, queued for the group's check callback (which runs before the next poll).
void OnReadableGrouped(Endpoint* ep, int status) {
  Group* g = ep->group;
  if (g->closed) {
    uv_poll_stop(ep->poll);
    return;
  }
  // libuv may poll again within one iteration (more than 1024 ready descriptors): the ring still holds the batch
  // not yet handed to JavaScript, so the rest waits in the kernel until after the check callback.
  if (ep->queued_generation == g->generation) return;
  int n = status < 0 ? status : ep->socket.Receive();
  if (n == 0) return;
  uint32_t* entry = g->ready + static_cast<size_t>(g->count) * kGroupWords;
  entry[0] = ep->id;
  entry[1] = n > 0 ? static_cast<uint32_t>(n) : 0;
  entry[2] = n > 0 ? 0 : static_cast<uint32_t>(status < 0 ? -status : -n);
  g->count++;  // never beyond capacity: one entry per member per generation, members <= capacity
  ep->queued_generation = g->generation;
}

void OnCheck(uv_check_t* handle) {
  Group* g = static_cast<Group*>(handle->data);
  if (g->count == 0 || g->closed) return;
  g->generation++;
  Napi::Env env(g->env);
  Napi::HandleScope scope(env);
  uint32_t n = g->count;
  napi_value args[1] = {Napi::Number::New(env, n)};
  g->in_callback = true;
  g->on_ready.MakeCallback(env.Global(), 1, args);
  g->in_callback = false;
  g->count = 0;
  if (env.IsExceptionPending()) {
    Napi::Error err = env.GetAndClearPendingException();
    napi_fatal_exception(env, err.Value());
  }
  if (g->closed) {
    g->ready_ref.Reset();
    g->on_ready.Reset();
  }
}

void OnReadable(uv_poll_t* handle, int status, int events) {
  Endpoint* ep = static_cast<Endpoint*>(handle->data);
  if (ep->closed) return;
  if (ep->group != nullptr) return OnReadableGrouped(ep, status);
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
  Group* group = nullptr;
  if (info[7].IsExternal()) {
    group = info[7].As<Napi::External<Group>>().Data();
    if (group == nullptr || group->tag != kGroupTag) return ThrowType(env, "onBatch must be a function or a UDP group");
    if (group->closed) return ThrowType(env, "UDP group is closed");
    if (group->members >= group->capacity) return ThrowRange(env, "UDP group is full");
    if (!info[10].IsNumber()) return ThrowType(env, "a grouped endpoint needs an id");
  } else if (!info[7].IsFunction()) {
    return ThrowType(env, "udpOpen(host, port, rxData, rxMeta, slotBytes, txData, txMeta, onBatch | group, rcvbuf, sndbuf, id)");
  }
  if (!info[0].IsString() || !info[1].IsNumber() || !info[4].IsNumber())
    return ThrowType(env, "udpOpen(host, port, rxData, rxMeta, slotBytes, txData, txMeta, onBatch | group, rcvbuf, sndbuf, id)");
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
  if (group != nullptr) {
    ep->group = group;
    ep->id = info[10].As<Napi::Number>().Uint32Value();
    ep->group_ref = Napi::Persistent(info[7].As<Napi::Object>());
    group->members++;
  } else {
    ep->on_batch = Napi::Persistent(info[7].As<Napi::Function>());
  }
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

Napi::Value GroupCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  View<uint32_t> ready = GetArray<uint32_t>(env, info[0], napi_uint32_array, "ready must be a Uint32Array");
  if (ready.data == nullptr) return env.Undefined();
  if (!info[1].IsFunction()) return ThrowType(env, "udpGroupCreate(ready, onReady)");
  if (ready.length < kGroupWords || ready.length % kGroupWords != 0) return ThrowRange(env, "ready must hold 3 words per endpoint");
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) {
    Napi::Error::New(env, "no libuv loop for this environment").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Group* g = new Group();
  g->env = env;
  g->ready = ready.data;
  g->capacity = static_cast<uint32_t>(ready.length / kGroupWords);
  g->check = new uv_check_t;
  uv_check_init(loop, g->check);  // cannot fail
  g->check->data = g;
  uv_check_start(g->check, OnCheck);
  uv_unref(reinterpret_cast<uv_handle_t*>(g->check));  // the endpoints' polls keep the loop alive, not the group
  g->ready_ref = Napi::Persistent(info[0].As<Napi::Uint32Array>());
  g->on_ready = Napi::Persistent(info[1].As<Napi::Function>());
  napi_add_env_cleanup_hook(env, Group::CleanupHook, g);
  return Napi::External<Group>::New(env, g, [](Napi::Env, Group* group) {
    group->Close();
    delete group;
  });
}

Napi::Value GroupClose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsExternal()) return ThrowType(env, "expected a UDP group");
  Group* g = info[0].As<Napi::External<Group>>().Data();
  if (g == nullptr || g->tag != kGroupTag) return ThrowType(env, "expected a UDP group");
  g->Close();
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
  exports.Set("udpGroupCreate", Napi::Function::New(env, GroupCreate));
  exports.Set("udpGroupClose", Napi::Function::New(env, GroupClose));
}

}  // namespace parley
