// N-API bindings: batched UDP endpoints (udp_io.h) on the Node event loop, alone (a uv_poll_t each) or in a group
// (io_uring, udp_ring.h, or a uv_poll_t each).
//
// udpOpen(host, port, rxData: Uint8Array, rxMeta: Uint32Array, slotBytes, txData: Uint8Array, txMeta: Uint32Array,
//         onBatch: (count, error?) => void, rcvbufBytes = 0, sndbufBytes = 0) -> handle
//   The buffers are JavaScript's, kept alive by references until close. When the socket is readable the poll
//   callback drains it with recvmmsg into the ring and calls onBatch(count) once per batch; JavaScript must read
//   the packets before returning (the next batch reuses the ring). A receive error other than EAGAIN is passed as
//   onBatch(0, error) with error.code the errno name; an exception thrown by onBatch is re-raised as uncaught.
// udpGroupCreate(ready: Uint32Array, onReady: (n) => void, backend = 0, payloadBytes = 1500, sendEntries = 4096,
//                receiveBuffers = 0, fixedFiles = false)
//   receiveBuffers: io_uring provided buffers (0: 4 per member, at least 256); fixedFiles: io_uring requests name
//   each member by its slot in a registered file table (no fget/fput per request) instead of its descriptor.
//   Per-worker receive dispatch for many low-rate sockets: an endpoint opened with a group (udpOpen's onBatch
//   argument replaced by the group and an id) has its datagrams put in its own ring, and [id, count, errno] is
//   appended to `ready`; onReady(n) then runs ONCE for all endpoints that received. Capacity: ready.length / 3.
//   Two backends (backend 0 = the first that works, 1 = io_uring only, 2 = poll only):
//   - io_uring (udp_ring.h): every member's receive is a multishot recvmsg on the group's ring; one uv_poll on the
//     ring's eventfd reaps all of them (one io_uring_enter) and dispatches; members' sends submitted together.
//   - poll: one uv_poll per endpoint, one recvmmsg per readable event, and a uv_check_t after the poll phase
//     calls onReady; sends are one sendmmsg per endpoint. Used where io_uring is missing or blocked.
// udpGroupBackend(group) -> 'io_uring' | 'poll'
// udpGroupSendMany(group, ids: Uint32Array, counts: Uint32Array, sent: Uint32Array, n)
//   as udpSendMany for members ids[0..n) of the group, without a handle per endpoint
// udpGroupClose(group): stops the dispatch; its endpoints stop receiving.
// udpSend(handle, count) -> sent           packets [0, count) of the tx table; EAGAIN drops the rest (counted)
// udpSendMany(handles[], counts: Uint32Array, sent: Uint32Array)   one crossing for many endpoints; members of an
//   io_uring group go out in one io_uring_enter per group (a failed packet is reported after all were tried)
// udpLocalPort(handle), udpStats(handle, out: Float64Array(5)), udpClose(handle)
// Errors are Error objects with code (errno name, e.g. 'EADDRINUSE'), errno (negative, as in libuv) and syscall.
#include <uv.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "handle.h"
#include "udp_io.h"
#include "udp_ring.h"

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

enum class GroupBackend : uint32_t { Auto = 0, Ring = 1, Poll = 2 };
// Provided receive buffers of the io_uring backend per member (a burst of a few packets per socket between two
// reaps), within the ring's limits.
constexpr uint32_t kRingBuffersPerMember = 4;
constexpr uint32_t kRingMinBuffers = 256;
// Datagrams handed to JavaScript per wake of the ring: a 20 ms tick of 1000 calls.
constexpr int kRingDatagramsPerWake = 1024;

struct Endpoint;

struct Group {
  uint32_t tag = kGroupTag;
  napi_env env = nullptr;
  UdpRing* ring = nullptr;        // io_uring backend; null: the poll backend (uv_poll per endpoint + check)
  uv_poll_t* ring_poll = nullptr;  // on the ring's eventfd; owned until its uv_close callback
  std::vector<Endpoint*> by_id;    // members by id (both backends), for udpGroupSendMany and the ring's completions
  uint32_t serial = 0;             // advanced per member opened: stale ring completions of a reused id are ignored
  uv_check_t* check = nullptr;  // owned until its uv_close callback (poll backend)
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
    if (check != nullptr) {
      uv_check_stop(check);
      uv_close(reinterpret_cast<uv_handle_t*>(check), [](uv_handle_t* h) { delete reinterpret_cast<uv_check_t*>(h); });
      check = nullptr;
    }
    if (ring_poll != nullptr) {
      uv_poll_stop(ring_poll);
      uv_close(reinterpret_cast<uv_handle_t*>(ring_poll), [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
      ring_poll = nullptr;
    }
    // Closing the ring ends every member's receive; the members' sockets stay open until they are closed.
    if (ring != nullptr) ring->Close();
    napi_remove_env_cleanup_hook(env, CleanupHook, this);
    if (!in_callback) {
      ready_ref.Reset();
      on_ready.Reset();
    }
  }
  static void CleanupHook(void* arg) { static_cast<Group*>(arg)->Close(); }

  // The member's receive: a live ring has it, else the endpoint's own uv_poll.
  bool RingActive() const { return ring != nullptr && ring->open() && !closed; }

  // Keeps the loop alive while the ring has members (the poll backend's endpoints hold their own polls).
  void UpdateRef() {
    if (ring_poll == nullptr) return;
    if (members > 0) uv_ref(reinterpret_cast<uv_handle_t*>(ring_poll));
    else uv_unref(reinterpret_cast<uv_handle_t*>(ring_poll));
  }

  ~Group() { delete ring; }
};

struct Endpoint {
  uint32_t tag = kEndpointTag;
  Group* group = nullptr;  // kept alive by group_ref
  uint32_t id = 0;
  uint32_t serial = 0;       // ring completions carry (serial << 32 | id)
  uint32_t ready_index = 0;  // this generation's entry in group->ready
  bool on_ring = false;      // receives through group->ring
  bool fixed_file = false;   // registered in the ring's file table at slot `id` (requests name the slot)
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
    if (group != nullptr) {
      // The ring lets go of the socket before it is closed, so its port can be bound again at once.
      if (on_ring && group->RingActive()) {
        group->ring->CancelRecv(ring_file(), fixed_file);
        if (fixed_file) group->ring->SetFile(id, -1);  // the ring's last reference to the socket
      }
      if (id < group->by_id.size() && group->by_id[id] == this) group->by_id[id] = nullptr;
      group->members--;
      group->UpdateRef();
    }
    socket.Close();
    napi_remove_env_cleanup_hook(env, CleanupHook, this);
    if (!in_callback) ReleaseReferences();  // else after onBatch returns: it is running
  }

  static void CleanupHook(void* arg) { static_cast<Endpoint*>(arg)->Close(); }

  // How the ring's requests name this socket: its registered slot, or its descriptor.
  int ring_file() const { return fixed_file ? static_cast<int>(id) : socket.fd(); }
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

// Hands the ready entries to JavaScript (one crossing) and starts a new generation.
void DispatchReady(Group* g) {
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

void OnCheck(uv_check_t* handle) {
  Group* g = static_cast<Group*>(handle->data);
  if (g->count == 0 || g->closed) return;
  DispatchReady(g);
}

constexpr uint64_t RingUserData(const Endpoint* ep) { return (static_cast<uint64_t>(ep->serial) << 32) | ep->id; }

// This generation's ready entry of ep (appended on first use).
uint32_t* ReadyEntry(Group* g, Endpoint* ep) {
  if (ep->queued_generation != g->generation) {
    ep->queued_generation = g->generation;
    ep->ready_index = g->count++;  // never beyond capacity: one entry per member per generation
    uint32_t* e = g->ready + static_cast<size_t>(ep->ready_index) * kGroupWords;
    e[0] = ep->id;
    e[1] = 0;
    e[2] = 0;
  }
  return g->ready + static_cast<size_t>(ep->ready_index) * kGroupWords;
}

void ArmOrReport(Group* g, Endpoint* ep) {
  int rc = g->ring->ArmRecv(ep->ring_file(), RingUserData(ep), ep->fixed_file);
  if (rc < 0) ReadyEntry(g, ep)[2] = static_cast<uint32_t>(-rc);
}

// One ring completion: copied into its endpoint's ring (the provided buffer goes straight back). Returns false,
// leaving the completion queued, when that ring is full for this generation.
bool OnRingDatagram(void* ctx, const RingDatagram& d) {
  Group* g = static_cast<Group*>(ctx);
  uint32_t id = static_cast<uint32_t>(d.user_data);
  Endpoint* ep = id < g->by_id.size() ? g->by_id[id] : nullptr;
  bool live = ep != nullptr && !ep->closed && ep->on_ring && ep->serial == static_cast<uint32_t>(d.user_data >> 32);
  if (live && d.has_buffer && ep->queued_generation == g->generation &&
      g->ready[static_cast<size_t>(ep->ready_index) * kGroupWords + 1] >= ep->socket.slots()) {
    return false;
  }
  if (live && d.has_buffer) {
    uint32_t* e = ReadyEntry(g, ep);
    ep->socket.Store(e[1], d.payload, d.length, d.address, d.port, d.truncated);
    e[1]++;
  }
  if (d.has_buffer) g->ring->ReturnBuffer(d.buffer_id);
  if (!live) return true;
  // ENOBUFS (all provided buffers in use) only pauses the receive: re-arm, the datagrams wait in the socket.
  if (d.error != 0 && d.error != ENOBUFS && d.error != ECANCELED) ReadyEntry(g, ep)[2] = static_cast<uint32_t>(d.error);
  if (d.ended && d.error != ECANCELED) ArmOrReport(g, ep);
  return true;
}

void OnRingReadable(uv_poll_t* handle, int status, int events) {
  Group* g = static_cast<Group*>(handle->data);
  // Several dispatches when a socket's ring filled (Reap stopped early), within a budget of datagrams per wake:
  // an overloaded worker still runs its timers (the pacing clock) between wakes, the kernel buffers the rest.
  int budget = kRingDatagramsPerWake;
  for (int i = 0; i < kMaxBatchesPerWake && budget > 0 && !g->closed; i++) {
    int n = g->ring->Reap(OnRingDatagram, g, budget);
    if (n < 0) {
      Napi::Env env(g->env);
      Napi::HandleScope scope(env);
      napi_fatal_exception(env, ErrnoError(env, -n, "io_uring_enter").Value());
      return;
    }
    budget -= n;
    if (g->count > 0) DispatchReady(g);
    if (g->closed || !g->ring->Pending()) return;
  }
  if (!g->closed) g->ring->Wake();  // completions left: the next loop turn comes back for them
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
  uint32_t group_id = 0;
  if (info[7].IsExternal()) {
    group = info[7].As<Napi::External<Group>>().Data();
    if (group == nullptr || group->tag != kGroupTag) return ThrowType(env, "onBatch must be a function or a UDP group");
    if (group->closed) return ThrowType(env, "UDP group is closed");
    if (group->members >= group->capacity) return ThrowRange(env, "UDP group is full");
    if (!info[10].IsNumber()) return ThrowType(env, "a grouped endpoint needs an id");
    double id = info[10].As<Napi::Number>().DoubleValue();
    if (!(id >= 0 && id < group->capacity) || id != static_cast<uint32_t>(id)) return ThrowRange(env, "group id out of range");
    group_id = static_cast<uint32_t>(id);
    if (group->by_id[group_id] != nullptr) return ThrowRange(env, "group id in use");
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
  if (group != nullptr && group->RingActive()) {
    ep->id = group_id;
    ep->serial = ++group->serial & 0x7fffffff;  // user_data stays below the ring's internal bit
    ep->on_ring = true;
    int rc = 0;
    if (group->ring->fixed_files() > 0) {
      rc = group->ring->SetFile(group_id, ep->socket.fd());
      ep->fixed_file = rc == 0;
    }
    if (rc == 0) rc = group->ring->ArmRecv(ep->ring_file(), RingUserData(ep), ep->fixed_file);
    if (rc < 0) {
      if (ep->fixed_file) group->ring->SetFile(group_id, -1);
      delete ep;
      ErrnoError(env, -rc, "io_uring recvmsg").ThrowAsJavaScriptException();
      return env.Undefined();
    }
  } else {
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
  }
  ep->rx_data = Napi::Persistent(info[2].As<Napi::Uint8Array>());
  ep->rx_meta = Napi::Persistent(info[3].As<Napi::Uint32Array>());
  ep->tx_data = Napi::Persistent(info[5].As<Napi::Uint8Array>());
  ep->tx_meta = Napi::Persistent(info[6].As<Napi::Uint32Array>());
  if (group != nullptr) {
    ep->group = group;
    ep->id = group_id;
    ep->group_ref = Napi::Persistent(info[7].As<Napi::Object>());
    group->by_id[group_id] = ep;
    group->members++;
    group->UpdateRef();
  } else {
    ep->on_batch = Napi::Persistent(info[7].As<Napi::Function>());
  }
  napi_add_env_cleanup_hook(env, Endpoint::CleanupHook, ep);
  return Napi::External<Endpoint>::New(env, ep, [](Napi::Env, Endpoint* e) {
    e->Close();
    delete e;
  });
}

// Sends one endpoint's table; returns the count sent or -1 with a pending exception (and *sent_before: the
// packets sent before the failing one).
int SendOne(Napi::Env env, Endpoint* ep, double count_value, uint32_t* sent_before = nullptr) {
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
    if (sent_before != nullptr) *sent_before = failed;
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

// A send call's packets through io_uring: queued per endpoint, submitted together, counted per endpoint.
class RingSend {
 public:
  RingSend(uint32_t* sent) : sent_(sent) {}

  // Queues endpoint `index`'s table (already checked); submits first whenever the ring changes or fills.
  // Returns false with *err set if a submit failed.
  bool Queue(Napi::Env env, Endpoint* ep, uint32_t index, uint32_t count) {
    UdpRing* ring = ep->group->ring;
    if (ring_ != nullptr && ring_ != ring && !Flush(env)) return false;
    ring_ = ring;
    if (index >= endpoints_.size()) endpoints_.resize(index + 1);
    endpoints_[index] = ep;
    const uint32_t* table = ep->socket.tx_meta();
    for (uint32_t p = 0; p < count; p++) {
      const uint32_t* m = table + static_cast<size_t>(p) * kUdpMetaWords;
      uint64_t user_data = (static_cast<uint64_t>(index) << 32) | p;
      const uint8_t* data = ep->socket.tx_data() + m[0];
      if (!ring->QueueSend(ep->ring_file(), data, m[1], m[2], static_cast<uint16_t>(m[3]), user_data, ep->fixed_file)) {
        if (!Flush(env)) return false;
        ring_ = ring;
        ring->QueueSend(ep->ring_file(), data, m[1], m[2], static_cast<uint16_t>(m[3]), user_data, ep->fixed_file);
      }
    }
    return true;
  }

  // Submits what is queued. Returns false with a pending exception if the submit failed or a packet failed with
  // anything but EAGAIN (dropped and counted, as sendmmsg does): the first such packet names the error.
  bool Flush(Napi::Env env) {
    if (ring_ == nullptr) return true;
    UdpRing* ring = ring_;
    ring_ = nullptr;
    int rc = ring->SubmitSends(OnSent, this);
    if (rc < 0) {
      ErrnoError(env, -rc, "io_uring_enter").ThrowAsJavaScriptException();
      return false;
    }
    if (failed_errno_ != 0) {
      Napi::Error e = ErrnoError(env, failed_errno_, "send");
      e.Set("index", Napi::Number::New(env, failed_packet_));
      e.Set("handleIndex", Napi::Number::New(env, failed_endpoint_));
      e.ThrowAsJavaScriptException();
      return false;
    }
    return true;
  }

 private:
  static void OnSent(void* ctx, uint64_t user_data, int result) {
    RingSend* self = static_cast<RingSend*>(ctx);
    uint32_t index = static_cast<uint32_t>(user_data >> 32);
    Endpoint* ep = self->endpoints_[index];
    if (result >= 0) {
      self->sent_[index]++;
      ep->socket.CountSent(1, 0);
    } else if (result == -EAGAIN || result == -EWOULDBLOCK) {
      ep->socket.CountSent(0, 1);
    } else if (self->failed_errno_ == 0 || index < self->failed_endpoint_) {
      self->failed_errno_ = -result;
      self->failed_endpoint_ = index;
      self->failed_packet_ = static_cast<uint32_t>(user_data);
    }
  }

  uint32_t* sent_;
  UdpRing* ring_ = nullptr;
  // Endpoint per call index, reused across calls (grows to the largest call; no allocation per tick after that).
  static thread_local std::vector<Endpoint*> endpoints_;
  int failed_errno_ = 0;
  uint32_t failed_endpoint_ = 0;
  uint32_t failed_packet_ = 0;
};
thread_local std::vector<Endpoint*> RingSend::endpoints_;

// Sends endpoint `index` of a many-endpoint call: through the ring when it is a live ring member, else sendmmsg.
// Returns false with a pending exception (naming handleIndex).
bool SendEndpoint(Napi::Env env, RingSend& ring_send, Endpoint* ep, uint32_t index, uint32_t count_value, uint32_t* sent) {
  if (ep->on_ring && ep->group->RingActive()) {
    const char* bad = ep->socket.CheckTx(count_value);
    if (bad == nullptr) return ring_send.Queue(env, ep, index, count_value);
    if (!ring_send.Flush(env)) return false;
    Napi::RangeError e = Napi::RangeError::New(env, bad);
    e.Set("handleIndex", Napi::Number::New(env, index));
    e.ThrowAsJavaScriptException();
    return false;
  }
  if (!ring_send.Flush(env)) return false;  // keeps the order of the call
  int r = SendOne(env, ep, count_value, &sent[index]);
  if (r < 0) {
    Napi::Error e = env.GetAndClearPendingException();
    e.Set("handleIndex", Napi::Number::New(env, index));
    e.ThrowAsJavaScriptException();
    return false;
  }
  sent[index] = static_cast<uint32_t>(r);
  return true;
}

// The loop of udpSendMany and udpGroupSendMany: sends counts[i] packets of each of n endpoints (io_uring members
// in one submission). endpoint_at(i, &error) returns the i-th endpoint, or nullptr with the error to throw: the
// sends before it still go out, then that error is thrown naming i as handleIndex (unless the flush threw first).
template <typename EndpointAt>
Napi::Value SendEndpoints(Napi::Env env, uint32_t n, const uint32_t* counts, uint32_t* sent, EndpointAt endpoint_at) {
  for (uint32_t i = 0; i < n; i++) sent[i] = 0;
  RingSend ring_send(sent);
  for (uint32_t i = 0; i < n; i++) {
    Napi::Error error;
    Endpoint* ep = endpoint_at(i, &error);
    if (ep == nullptr) {
      if (ring_send.Flush(env)) {
        error.Set("handleIndex", Napi::Number::New(env, i));
        error.ThrowAsJavaScriptException();
      }
      return env.Undefined();
    }
    if (!SendEndpoint(env, ring_send, ep, i, counts[i], sent)) return env.Undefined();
  }
  ring_send.Flush(env);
  return env.Undefined();
}

// udpSendMany(handles, counts, sent): on an error, sent[] holds what went out and the error names the endpoint
// (`handleIndex`) besides the packet (`index`). Endpoints before it were sent; those after it were not, except
// io_uring members submitted in the same io_uring_enter (a send failure is known only after it): all of those
// were tried, and sent[] says which went out.
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
  return SendEndpoints(env, n, counts.data, sent.data, [&](uint32_t i, Napi::Error* error) {
    Endpoint* ep = Unwrap(env, handles.Get(i), true);
    if (ep == nullptr) *error = env.GetAndClearPendingException();
    return ep;
  });
}

Group* UnwrapGroup(Napi::Env env, const Napi::Value& v) {
  Group* g = v.IsExternal() ? v.As<Napi::External<Group>>().Data() : nullptr;
  if (g == nullptr || g->tag != kGroupTag) {
    Napi::TypeError::New(env, "expected a UDP group").ThrowAsJavaScriptException();
    return nullptr;
  }
  return g;
}

// udpGroupSendMany(group, ids, counts, sent, n): udpSendMany for members by id (no handle to unwrap per member);
// errors name the position in ids as handleIndex.
Napi::Value GroupSendMany(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Group* g = UnwrapGroup(env, info[0]);
  if (g == nullptr) return env.Undefined();
  View<uint32_t> ids = GetArray<uint32_t>(env, info[1], napi_uint32_array, "ids must be a Uint32Array");
  if (ids.data == nullptr) return env.Undefined();
  View<uint32_t> counts = GetArray<uint32_t>(env, info[2], napi_uint32_array, "counts must be a Uint32Array");
  if (counts.data == nullptr) return env.Undefined();
  View<uint32_t> sent = GetArray<uint32_t>(env, info[3], napi_uint32_array, "sent must be a Uint32Array");
  if (sent.data == nullptr) return env.Undefined();
  if (!info[4].IsNumber()) return ThrowType(env, "udpGroupSendMany(group, ids, counts, sent, n)");
  double nv = info[4].As<Napi::Number>().DoubleValue();
  if (!(nv >= 0) || nv != static_cast<uint32_t>(nv)) return ThrowRange(env, "n must be a non-negative integer");
  uint32_t n = static_cast<uint32_t>(nv);
  if (ids.length < n || counts.length < n || sent.length < n) return ThrowRange(env, "ids, counts and sent must hold n entries");
  return SendEndpoints(env, n, counts.data, sent.data, [&](uint32_t i, Napi::Error* error) -> Endpoint* {
    uint32_t id = ids.data[i];
    Endpoint* ep = id < g->by_id.size() ? g->by_id[id] : nullptr;
    if (ep != nullptr && !ep->closed) return ep;
    *error = ErrnoError(env, EBADF, "udp (closed)");
    return nullptr;
  });
}

Napi::Value GroupCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  View<uint32_t> ready = GetArray<uint32_t>(env, info[0], napi_uint32_array, "ready must be a Uint32Array");
  if (ready.data == nullptr) return env.Undefined();
  if (!info[1].IsFunction()) return ThrowType(env, "udpGroupCreate(ready, onReady, backend, payloadBytes, sendEntries, receiveBuffers, fixedFiles)");
  if (ready.length < kGroupWords || ready.length % kGroupWords != 0) return ThrowRange(env, "ready must hold 3 words per endpoint");
  auto number_or = [&](size_t i, double fallback) { return info[i].IsNumber() ? info[i].As<Napi::Number>().DoubleValue() : fallback; };
  double backend_value = number_or(2, 0);
  double payload_bytes = number_or(3, 1500);
  double send_entries = number_or(4, 4096);
  double receive_buffers = number_or(5, 0);
  bool fixed_files = info[6].IsBoolean() && info[6].As<Napi::Boolean>().Value();
  if (backend_value != 0 && backend_value != 1 && backend_value != 2) return ThrowRange(env, "backend must be 0 (auto), 1 (io_uring) or 2 (poll)");
  if (!(payload_bytes >= 1 && payload_bytes <= kUdpMaxPayload) || payload_bytes != static_cast<uint32_t>(payload_bytes))
    return ThrowRange(env, "payloadBytes must be 1..65507");
  if (!(send_entries >= 1 && send_entries <= 32768) || send_entries != static_cast<uint32_t>(send_entries))
    return ThrowRange(env, "sendEntries must be 1..32768");
  if (!(receive_buffers >= 0 && receive_buffers <= 32768) || receive_buffers != static_cast<uint32_t>(receive_buffers))
    return ThrowRange(env, "receiveBuffers must be 0..32768");
  GroupBackend backend = static_cast<GroupBackend>(static_cast<uint32_t>(backend_value));
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) {
    Napi::Error::New(env, "no libuv loop for this environment").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Group* g = new Group();
  g->env = env;
  g->ready = ready.data;
  g->capacity = static_cast<uint32_t>(ready.length / kGroupWords);
  g->by_id.assign(g->capacity, nullptr);
  if (backend != GroupBackend::Poll) {
    // A shared socket (one member for all calls) asks for as many as it needs: a loop turn's packets of all calls.
    uint32_t buffers = receive_buffers > 0 ? static_cast<uint32_t>(receive_buffers) : g->capacity * kRingBuffersPerMember;
    g->ring = new UdpRing();
    int err = g->ring->Open(buffers < kRingMinBuffers ? kRingMinBuffers : buffers, static_cast<uint32_t>(payload_bytes),
                            static_cast<uint32_t>(send_entries), fixed_files ? g->capacity : 0);
    int rc = err == 0 ? 0 : -err;
    if (rc == 0) {
      g->ring_poll = new uv_poll_t;
      rc = uv_poll_init(loop, g->ring_poll, g->ring->event_fd());
      if (rc != 0) {
        delete g->ring_poll;
        g->ring_poll = nullptr;
      } else {
        g->ring_poll->data = g;
        uv_poll_start(g->ring_poll, UV_READABLE, OnRingReadable);  // cannot fail on an initialised eventfd poll
        g->UpdateRef();
      }
    }
    if (rc != 0) {
      delete g->ring;  // closes what was opened
      g->ring = nullptr;
      if (backend == GroupBackend::Ring) {
        delete g;
        ErrnoError(env, -rc, "io_uring_setup").ThrowAsJavaScriptException();
        return env.Undefined();
      }
    }
  }
  if (g->ring == nullptr) {
    g->check = new uv_check_t;
    uv_check_init(loop, g->check);  // cannot fail
    g->check->data = g;
    uv_check_start(g->check, OnCheck);
    uv_unref(reinterpret_cast<uv_handle_t*>(g->check));  // the endpoints' polls keep the loop alive, not the group
  }
  g->ready_ref = Napi::Persistent(info[0].As<Napi::Uint32Array>());
  g->on_ready = Napi::Persistent(info[1].As<Napi::Function>());
  napi_add_env_cleanup_hook(env, Group::CleanupHook, g);
  return Napi::External<Group>::New(env, g, [](Napi::Env, Group* group) {
    group->Close();
    delete group;
  });
}

Napi::Value GroupBackendName(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Group* g = UnwrapGroup(env, info[0]);
  if (g == nullptr) return env.Undefined();
  return Napi::String::New(env, g->ring != nullptr ? "io_uring" : "poll");
}

Napi::Value GroupClose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Group* g = UnwrapGroup(env, info[0]);
  if (g == nullptr) return env.Undefined();
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
  exports.Set("udpGroupBackend", Napi::Function::New(env, GroupBackendName));
  exports.Set("udpGroupSendMany", Napi::Function::New(env, GroupSendMany));
}

}  // namespace parley
