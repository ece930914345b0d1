// Handles: the env's slot table, wrapping, destroy (handle.h).
#include "handle.h"

namespace parley {

uint32_t HandleTable::Add(Kind kind, Module* module) {
  uint32_t index;
  if (free_head_ < free_.size()) {
    index = free_[free_head_++];
    // Compact the queue once its consumed head is half of it: amortised O(1), no deque.
    if (free_head_ * 2 >= free_.size()) {
      free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(free_head_));
      free_head_ = 0;
    }
  } else {
    if (slots_.size() >= kMaxSlots) return 0;
    index = static_cast<uint32_t>(slots_.size());
    slots_.push_back(Slot{nullptr, Kind{}, 1});
  }
  Slot& slot = slots_[index];
  slot.ptr = module;
  slot.kind = kind;
  return index | slot.generation << kIndexBits;
}

void HandleTable::Release(uint32_t id) {
  uint32_t index = id & (kMaxSlots - 1);
  Slot& slot = slots_[index];
  slot.ptr = nullptr;
  slot.kind = Kind{};
  // Generations run 1..2^kGenerationBits - 1: an id is never 0, whatever its index.
  slot.generation = slot.generation + 1 < (1u << kGenerationBits) ? slot.generation + 1 : 1;
  free_.push_back(index);
}

Napi::Value WrapHandle(Napi::Env env, Kind kind, Module* module) {
  HandleTable* table = HandleTable::Of(env);
  uint32_t id = table->Add(kind, module);
  if (id == 0) {
    delete module;
    Napi::RangeError::New(env, "too many live native DSP handles").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  table->Ref();
  Box* box = new Box{table, id};
  return Napi::External<Box>::New(env, box, [](Napi::Env, Box* b) {
    delete b->Get().ptr;
    b->table->Release(b->slot);
    b->table->Unref();
    delete b;
  });
}

void DestroyHandle(Napi::Env env, const Napi::Value& value) {
  if (!value.IsExternal()) {
    Napi::TypeError::New(env, "expected a native DSP handle").ThrowAsJavaScriptException();
    return;
  }
  // The slot stays the Box's (its id now reads as destroyed) until the External is collected.
  Slot& slot = value.As<Napi::External<Box>>().Data()->Get();
  delete slot.ptr;
  slot.ptr = nullptr;
}

namespace {

// handleSlot(handle) -> the slot id the module's calls also take (handle.h, "Slots").
Napi::Value SlotOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  void* data = nullptr;
  if (napi_get_value_external(env, info[0], &data) != napi_ok || data == nullptr) {
    Napi::TypeError::New(env, "expected a native DSP handle").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  return Napi::Number::New(env, static_cast<Box*>(data)->slot);
}

}  // namespace

void InitHandles(Napi::Env env, Napi::Object exports) {
  napi_set_instance_data(env, new HandleTable(), [](napi_env, void* data, void*) { static_cast<HandleTable*>(data)->Unref(); }, nullptr);
  exports.Set("handleSlot", Napi::Function::New(env, SlotOf, "handleSlot"));
}

}  // namespace parley
