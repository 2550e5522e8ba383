// KV-cache events as vLLM publishes them (`--kv-events-config`, publisher "zmq"), decoded and
// encoded. Docs: docs/routing.md, "prefix-cache (precise)".
//
// A ZMQ PUB message has three frames: a topic (bytes, "" by default), an 8-byte big-endian
// sequence number, and a MessagePack EventBatch: [ts, events, data_parallel_rank?] (older vLLM,
// array-like) or {"ts", "events", "data_parallel_rank"?} (msgspec's default struct encoding).
// Each event is a tagged struct, either a map with a "type" key or a positional array whose first
// element is the tag:
//   BlockStored:  block_hashes, parent_block_hash (or nil), token_ids, block_size, lora_id,
//                 medium, lora_name, extra_keys, group_idx, kv_cache_spec_kind, ... (newer
//                 fields are optional and ignored)
//   BlockRemoved: block_hashes, medium, group_idx
//   AllBlocksCleared: no fields
// (field order as in vllm/distributed/kv_events.py.) A block hash is an integer (vLLM's default:
// 64-bit, signed or unsigned) or bytes (sha256 digests); bytes are folded to their last 8 bytes
// read big-endian, so both kinds key the same 64-bit index. Events of an unknown type are
// skipped (counted in KvEventBatch::unknown), so a newer engine does not break the subscriber.
//
// decodeKvEventBatch never throws and never reads out of bounds: malformed input yields a
// KvDecodeError (tests/fuzz/kv_events_fuzz.cc). It allocates the batch's vectors (off the hot
// path: the subscriber's thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::fleet::kv_index {

enum class KvEventType : uint8_t { kBlockStored, kBlockRemoved, kAllBlocksCleared };

struct KvEvent {
  KvEventType type = KvEventType::kBlockStored;
  std::vector<uint64_t> block_hashes;
  std::optional<uint64_t> parent_block_hash;  // BlockStored: nil for a chain's first block
  std::vector<int64_t> token_ids;             // BlockStored
  uint32_t block_size = 0;                    // BlockStored
  std::string medium;                         // "" when absent or nil ("GPU" in vLLM)
};

struct KvEventBatch {
  double ts = 0;
  std::vector<KvEvent> events;
  int64_t data_parallel_rank = -1;  // -1: absent
  uint32_t unknown = 0;             // events of a type not known here, skipped
};

enum class KvDecodeError : uint8_t {
  kNone,
  kNotABatch,  // not an array/map of [ts, events, rank?]
  kBadEvent,   // an event of a known type with a field of the wrong type or missing
  kTrailing,   // bytes after the batch
  kTooLarge,   // more events or hashes than the limits below
};
std::string_view kvDecodeErrorName(KvDecodeError error);

inline constexpr uint32_t kMaxEventsPerBatch = 1 << 20;
inline constexpr uint32_t kMaxHashesPerEvent = 1 << 20;

// Decodes one EventBatch payload into `batch` (cleared first).
KvDecodeError decodeKvEventBatch(std::string_view payload, KvEventBatch& batch);

// The sequence frame: exactly 8 bytes, big-endian, signed (-1 ends a replay).
std::optional<int64_t> decodeSequence(std::string_view frame);
std::string encodeSequence(int64_t seq);

// How events are encoded: maps tagged "type" (newer vLLM, the default) or positional arrays.
enum class KvEventEncoding : uint8_t { kMap, kArray };
std::optional<KvEventEncoding> parseKvEventEncoding(std::string_view text);

// Appends the MessagePack EventBatch of `batch` to `out` (the engine emulator's publisher). The
// batch itself is an array [ts, events, rank?] with kArray, a map with kMap.
void encodeKvEventBatch(const KvEventBatch& batch, KvEventEncoding encoding, std::string& out);

}  // namespace switchyard::fleet::kv_index
