// Opaque handles and argument checks shared by the N-API bindings.
//
// Every DSP module is a C++ object created once (all allocation happens there) and handed to JavaScript as an
// External wrapping a Box, which names the module's slot (below). destroy() frees the object at once; the External's
// finalizer frees whatever is left when the handle is garbage-collected. The slot's kind is the type discriminator
// checked on every call, so a handle of one module passed to another is a TypeError, never a wild pointer.
//
// Slots: every Box also has a slot in its env's HandleTable, and the slot's id (a small integer, handleSlot()) is
// accepted wherever a handle is. The per-frame calls take the id: the External and its Box are separate cold objects
// of each stream (two likely cache misses per call when many streams run), while the table is one small array that
// every call keeps warm. The External still owns the module: its JavaScript owner holds both, and the slot is given
// back only when the External is collected, so an id read off a live owner never names another module. An id carries
// its slot's generation (bumped when the slot is given back), so a stale id kept elsewhere is caught as well, short
// of 2^kGenerationBits reuses of the same slot.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace parley {

enum class Kind : uint32_t { Resampler = 1, Vad = 2, Dtmf = 3, Tone = 4, ResampleEncodeGroup = 5, TimeStretch = 6 };

struct Module {
  virtual ~Module() = default;
};

struct Slot {
  Module* ptr;  // null while free or after destroy()
  Kind kind;
  uint32_t generation;
};

// The slots of one env (napi instance data). Shared by the env and every Box made in it: freed by whichever of
// them goes last (at env teardown the order of finalizers is not defined).
class HandleTable {
 public:
  // id = index | generation << kIndexBits: a non-negative int32 (a Smi to V8), never 0 (index 0 is not used).
  static constexpr uint32_t kIndexBits = 20;
  static constexpr uint32_t kGenerationBits = 11;
  static constexpr uint32_t kMaxSlots = 1u << kIndexBits;

  // The env's table, made at module load (InitHandles).
  static HandleTable* Of(napi_env env) {
    void* data = nullptr;
    napi_get_instance_data(env, &data);
    return static_cast<HandleTable*>(data);
  }

  // A slot for a new module; 0 when the table is full (kMaxSlots live handles in one env).
  uint32_t Add(Kind kind, Module* module);
  // The slot an id names, or null when it names none (out of range, free, or of an older generation).
  Slot* Find(int32_t id) {
    uint32_t u = static_cast<uint32_t>(id);
    uint32_t index = u & (kMaxSlots - 1);
    if (id <= 0 || index >= slots_.size()) return nullptr;
    Slot* slot = &slots_[index];
    if (slot->kind == Kind{} || slot->generation != u >> kIndexBits) return nullptr;
    return slot;
  }
  Slot& At(uint32_t id) { return slots_[id & (kMaxSlots - 1)]; }
  // The handle is collected: the slot is free for another, under the next generation.
  void Release(uint32_t id);

  void Ref() { refs_++; }
  // Drops a reference; deletes the table with the last.
  void Unref() {
    if (--refs_ == 0) delete this;
  }

 private:
  std::vector<Slot> slots_ = std::vector<Slot>(1, Slot{nullptr, Kind{}, 0});
  // Free slots, reused oldest first so a slot's generation turns over as slowly as it can.
  std::vector<uint32_t> free_;
  size_t free_head_ = 0;
  uint32_t refs_ = 1;  // the env's
};

// What an External holds: its slot (the one record of the module, its kind and whether it is destroyed), in its
// env's table.
struct Box {
  HandleTable* table;
  uint32_t slot;  // its id
  Slot& Get() const { return table->At(slot); }
};

// Makes the env's HandleTable and exports handleSlot(handle) -> id.
void InitHandles(Napi::Env env, Napi::Object exports);

Napi::Value WrapHandle(Napi::Env env, Kind kind, Module* module);

// Returns the live module behind a handle or a slot id, or null with a pending TypeError.
template <typename T>
T* UnwrapHandle(Napi::Env env, const Napi::Value& value, Kind kind) {
  // Each of napi_get_value_int32 and napi_get_value_external fails (without a pending exception) on the other's
  // kind of value: one call for an id, two for an External.
  Module* module;
  Kind actual;
  int32_t id;
  if (napi_get_value_int32(env, value, &id) == napi_ok) {
    const Slot* slot = HandleTable::Of(env)->Find(id);
    if (slot == nullptr) {
      Napi::TypeError::New(env, "not the slot of a native DSP handle (or a stale one)").ThrowAsJavaScriptException();
      return nullptr;
    }
    module = slot->ptr;
    actual = slot->kind;
  } else {
    void* data = nullptr;
    if (napi_get_value_external(env, value, &data) != napi_ok || data == nullptr) {
      Napi::TypeError::New(env, "expected a native DSP handle").ThrowAsJavaScriptException();
      return nullptr;
    }
    const Slot& slot = static_cast<Box*>(data)->Get();
    module = slot.ptr;
    actual = slot.kind;
  }
  if (actual != kind) {
    Napi::TypeError::New(env, "native handle of the wrong kind").ThrowAsJavaScriptException();
    return nullptr;
  }
  if (module == nullptr) {
    Napi::Error::New(env, "native handle used after destroy()").ThrowAsJavaScriptException();
    return nullptr;
  }
  return static_cast<T*>(module);
}

// The Box behind a handle (an External, not an id) of `kind` (its module may be destroyed later: check
// Get().ptr at each use), or null with a pending TypeError.
inline Box* BoxOf(Napi::Env env, const Napi::Value& value, Kind kind) {
  void* data = nullptr;
  if (napi_get_value_external(env, value, &data) != napi_ok || data == nullptr ||
      static_cast<Box*>(data)->Get().kind != kind) {
    Napi::TypeError::New(env, "expected a native DSP handle of the right kind").ThrowAsJavaScriptException();
    return nullptr;
  }
  return static_cast<Box*>(data);
}

// destroy(handle): frees the module now (the External, not an id: only the owner destroys).
void DestroyHandle(Napi::Env env, const Napi::Value& value);

// A typed-array view checked for element type; data == nullptr means a TypeError is pending.
template <typename T>
struct View {
  T* data = nullptr;
  size_t length = 0;
};

// One N-API call per array (napi_get_typedarray_info fails, without a pending exception, on anything that is not
// a typed array): this runs for every array of every per-frame call.
template <typename T>
View<T> GetArray(Napi::Env env, const Napi::Value& value, napi_typedarray_type type, const char* what) {
  View<T> view;
  napi_typedarray_type actual;
  size_t length = 0;
  void* data = nullptr;
  if (napi_get_typedarray_info(env, value, &actual, &length, &data, nullptr, nullptr) != napi_ok || actual != type) {
    Napi::TypeError::New(env, what).ThrowAsJavaScriptException();
    return view;
  }
  static T empty{};
  view.data = length == 0 ? &empty : static_cast<T*>(data);
  view.length = length;
  return view;
}

inline View<int16_t> GetI16(Napi::Env env, const Napi::Value& v, const char* what) {
  return GetArray<int16_t>(env, v, napi_int16_array, what);
}
inline View<uint8_t> GetU8(Napi::Env env, const Napi::Value& v, const char* what) {
  return GetArray<uint8_t>(env, v, napi_uint8_array, what);
}
inline View<float> GetF32(Napi::Env env, const Napi::Value& v, const char* what) {
  return GetArray<float>(env, v, napi_float32_array, what);
}
inline View<double> GetF64(Napi::Env env, const Napi::Value& v, const char* what) {
  return GetArray<double>(env, v, napi_float64_array, what);
}
inline View<int32_t> GetI32(Napi::Env env, const Napi::Value& v, const char* what) {
  return GetArray<int32_t>(env, v, napi_int32_array, what);
}

inline Napi::Value ThrowRange(Napi::Env env, const char* message) {
  Napi::RangeError::New(env, message).ThrowAsJavaScriptException();
  return env.Undefined();
}

inline Napi::Value ThrowType(Napi::Env env, const char* message) {
  Napi::TypeError::New(env, message).ThrowAsJavaScriptException();
  return env.Undefined();
}

// Registration hooks, one per binding file (InitHandles above).
void InitG711(Napi::Env env, Napi::Object exports);
void InitResampler(Napi::Env env, Napi::Object exports);
void InitVad(Napi::Env env, Napi::Object exports);
void InitDetectors(Napi::Env env, Napi::Object exports);
void InitBlockWriter(Napi::Env env, Napi::Object exports);

}  // namespace parley
