// Opaque handles and argument checks shared by the N-API bindings.
//
// Every DSP module is a C++ object created once (all allocation happens there) and handed to JavaScript as an
// External wrapping a Box. destroy() frees the object at once; the External's finalizer frees whatever is left
// when the handle is garbage-collected. Box::kind is the type discriminator checked on every call, so a handle of
// one module passed to another is a TypeError, never a wild pointer.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>

namespace parley {

enum class Kind : uint32_t { Resampler = 1, Vad = 2, Dtmf = 3, Tone = 4, ResampleEncodeGroup = 5, TimeStretch = 6 };

struct Module {
  virtual ~Module() = default;
};

struct Box {
  Kind kind;
  Module* ptr;  // null after destroy()
};

inline Napi::Value WrapHandle(Napi::Env env, Kind kind, Module* module) {
  Box* box = new Box{kind, module};
  return Napi::External<Box>::New(env, box, [](Napi::Env, Box* b) {
    delete b->ptr;
    delete b;
  });
}

// Returns the live module behind a handle, or null with a pending TypeError.
template <typename T>
T* UnwrapHandle(Napi::Env env, const Napi::Value& value, Kind kind) {
  // napi_get_value_external fails (without a pending exception) on anything but an External: one call, not two.
  void* data = nullptr;
  if (napi_get_value_external(env, value, &data) != napi_ok) {
    Napi::TypeError::New(env, "expected a native DSP handle").ThrowAsJavaScriptException();
    return nullptr;
  }
  Box* box = static_cast<Box*>(data);
  if (box == nullptr || box->kind != kind) {
    Napi::TypeError::New(env, "native handle of the wrong kind").ThrowAsJavaScriptException();
    return nullptr;
  }
  if (box->ptr == nullptr) {
    Napi::Error::New(env, "native handle used after destroy()").ThrowAsJavaScriptException();
    return nullptr;
  }
  return static_cast<T*>(box->ptr);
}

// The Box behind a handle of `kind` (its module may be destroyed later: check ptr at each use), or null with a
// pending TypeError.
inline Box* BoxOf(Napi::Env env, const Napi::Value& value, Kind kind) {
  void* data = nullptr;
  if (napi_get_value_external(env, value, &data) != napi_ok || data == nullptr ||
      static_cast<Box*>(data)->kind != kind) {
    Napi::TypeError::New(env, "expected a native DSP handle of the right kind").ThrowAsJavaScriptException();
    return nullptr;
  }
  return static_cast<Box*>(data);
}

inline void DestroyHandle(Napi::Env env, const Napi::Value& value) {
  if (!value.IsExternal()) {
    Napi::TypeError::New(env, "expected a native DSP handle").ThrowAsJavaScriptException();
    return;
  }
  Box* box = value.As<Napi::External<Box>>().Data();
  delete box->ptr;
  box->ptr = nullptr;
}

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

// Registration hooks, one per binding file.
void InitG711(Napi::Env env, Napi::Object exports);
void InitResampler(Napi::Env env, Napi::Object exports);
void InitVad(Napi::Env env, Napi::Object exports);
void InitDetectors(Napi::Env env, Napi::Object exports);
void InitBlockWriter(Napi::Env env, Napi::Object exports);

}  // namespace parley
