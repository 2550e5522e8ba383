// Fuzz target: vLLM's KV-event batches (fleet/kv_index/kv_event_decoder.h) and the MessagePack
// reader under them. Any bytes must decode or yield a KvDecodeError, never crash, hang or read out
// of bounds; what decodes must survive a re-encode in both encodings unchanged; and the replica
// tracker must take any sequence of such batches.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fleet/kv_index/kv_event_decoder.h"
#include "fleet/kv_index/kv_event_tracker.h"
#include "fleet/kv_index/msgpack_lite.h"

using namespace switchyard::fleet::kv_index;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256 * 1024) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  KvEventBatch batch;
  if (decodeKvEventBatch(input, batch) == KvDecodeError::kNone) {
    for (KvEventEncoding encoding : {KvEventEncoding::kMap, KvEventEncoding::kArray}) {
      std::string again;
      encodeKvEventBatch(batch, encoding, again);
      KvEventBatch back;
      if (decodeKvEventBatch(again, back) != KvDecodeError::kNone) std::abort();
      if (back.events.size() != batch.events.size()) std::abort();
      for (size_t i = 0; i < back.events.size(); ++i) {
        if (back.events[i].block_hashes != batch.events[i].block_hashes) std::abort();
        if (back.events[i].type != batch.events[i].type) std::abort();
      }
    }
  }
  msgpack::Reader reader(input);
  while (!reader.atEnd() && reader.skip()) {
  }
  // The input as a stream of batches: a sequence byte, then a payload up to the next 0xff.
  ReplicaKvTracker tracker(16, 0);
  size_t at = 0;
  while (at < input.size()) {
    const auto seq = static_cast<uint8_t>(input[at++]);
    const size_t end = std::min(input.find('\xff', at), input.size());
    tracker.receive(seq, input.substr(at, end - at), ReplayFn(), 0);
    at = end + 1;
  }
  return 0;
}
