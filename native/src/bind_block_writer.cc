// N-API binding of the batched block writes (block_writer.h) of src/media/recording-writer.ts: one job on libuv's
// thread pool per batch. The file descriptors and the blocks are the caller's: it keeps each file open until the
// batch has called back; the blocks are held here (the batch's receiver) until then.
#include <vector>

#include "block_writer.h"
#include "handle.h"

namespace parley {
namespace {

class WriteBatch : public Napi::AsyncWorker {
 public:
  // `blocks` (the JavaScript array of the blocks) is kept alive as the job's receiver until it has called back.
  WriteBatch(const Napi::Object& blocks, const Napi::Function& done, std::vector<BlockWrite> writes)
      : Napi::AsyncWorker(blocks, done, "parley:recording-blocks"), writes_(std::move(writes)) {}

  void Execute() override { WriteBlocks(writes_.data(), writes_.size()); }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Float64Array results = Napi::Float64Array::New(env, 2 * writes_.size());
    for (size_t i = 0; i < writes_.size(); i++) {
      results[2 * i] = static_cast<double>(writes_[i].written);
      results[2 * i + 1] = writes_[i].error;
    }
    Callback().Call({results});
  }

 private:
  std::vector<BlockWrite> writes_;
};

// writeBlocks(fds: Int32Array, blocks: Int16Array[], pairs: Int32Array, offsets: Float64Array, groups: Int32Array,
// done(results)): writes the first pairs[i] sample pairs of the planar stereo blocks[i] (left half, right half),
// interleaved little-endian, to fds[i] at offsets[i], on the thread pool, in order; a group's writes after one of
// them failed are skipped. results[2i] is the bytes the i-th write wrote, results[2i + 1] 0 or its error (errno,
// kNothingWritten, kSkipped).
Napi::Value WriteBlocksCall(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  View<int32_t> fds = GetI32(env, info[0], "fds must be an Int32Array");
  if (fds.data == nullptr) return env.Undefined();
  if (!info[1].IsArray()) return ThrowType(env, "blocks must be an array of Int16Array");
  View<int32_t> pairs = GetI32(env, info[2], "pairs must be an Int32Array");
  if (pairs.data == nullptr) return env.Undefined();
  View<double> offsets = GetF64(env, info[3], "offsets must be a Float64Array");
  if (offsets.data == nullptr) return env.Undefined();
  View<int32_t> groups = GetI32(env, info[4], "groups must be an Int32Array");
  if (groups.data == nullptr) return env.Undefined();
  if (!info[5].IsFunction()) return ThrowType(env, "done must be a function");
  Napi::Array blocks = info[1].As<Napi::Array>();
  const size_t count = blocks.Length();
  if (fds.length != count || pairs.length != count || offsets.length != count || groups.length != count)
    return ThrowRange(env, "fds, blocks, pairs, offsets and groups must have one entry per block");
  std::vector<BlockWrite> writes(count);
  for (size_t i = 0; i < count; i++) {
    View<int16_t> planar = GetI16(env, blocks.Get(static_cast<uint32_t>(i)), "each block must be an Int16Array");
    if (planar.data == nullptr) return env.Undefined();
    if (planar.length % 2 != 0) return ThrowRange(env, "a block holds two channels of equal length");
    const size_t capacity = planar.length / 2;
    if (pairs.data[i] < 0 || static_cast<size_t>(pairs.data[i]) > capacity) return ThrowRange(env, "pairs beyond the block");
    const double offset = offsets.data[i];
    if (!(offset >= 0) || offset > 9007199254740991.0 || fds.data[i] < 0) return ThrowRange(env, "bad fd or offset");
    writes[i].fd = fds.data[i];
    writes[i].group = groups.data[i];
    writes[i].planar = planar.data;
    writes[i].capacity = capacity;
    writes[i].pairs = static_cast<size_t>(pairs.data[i]);
    writes[i].offset = static_cast<int64_t>(offset);
  }
  (new WriteBatch(blocks, info[5].As<Napi::Function>(), std::move(writes)))->Queue();
  return env.Undefined();
}

}  // namespace

void InitBlockWriter(Napi::Env env, Napi::Object exports) {
  exports.Set("writeBlocks", Napi::Function::New(env, WriteBlocksCall, "writeBlocks"));
}

}  // namespace parley
