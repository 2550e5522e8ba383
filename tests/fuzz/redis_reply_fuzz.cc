// Fuzz target: Redis replies as the gateway reads them: RESP bytes through hiredis's reader (the
// parser under the gateway's Redis connection) into RedisValue::fromReply, fed whole and in
// pieces cut where the input says. Both ways must yield the same replies, and every accessor of
// a value must be safe on anything the server could send.
#include <hiredis/hiredis.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "state/redis/redis_value.h"

namespace {

using switchyard::state::redis::RedisValue;

void check(bool condition) {
  if (!condition) std::abort();
}

bool equal(const RedisValue& a, const RedisValue& b) {
  if (a.type != b.type || a.integer != b.integer || a.text != b.text ||
      a.elements.size() != b.elements.size()) {
    return false;
  }
  for (size_t i = 0; i < a.elements.size(); ++i) {
    if (!equal(a.elements[i], b.elements[i])) return false;
  }
  return true;
}

// Every reply the reader yields from `pieces`, and whether it stopped on a protocol error.
std::vector<RedisValue> readAll(const std::vector<std::string_view>& pieces, bool& error) {
  std::vector<RedisValue> out;
  redisReader* reader = redisReaderCreate();
  error = false;
  for (std::string_view piece : pieces) {
    if (redisReaderFeed(reader, piece.data(), piece.size()) != REDIS_OK) {
      error = true;
      break;
    }
    for (;;) {
      void* reply = nullptr;
      if (redisReaderGetReply(reader, &reply) != REDIS_OK) {
        error = true;
        break;
      }
      if (reply == nullptr) break;
      const RedisValue value = RedisValue::fromReply(*static_cast<redisReply*>(reply));
      freeReplyObject(reply);
      // What the gateway's scripts' callers read.
      for (size_t i = 0; i < 12; ++i) value.integerAt(i, -7);
      check(value.isArray() || value.elements.empty());
      out.push_back(value);
    }
    if (error) break;
  }
  redisReaderFree(reader);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 64 * 1024) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Arrays of millions of elements make hiredis allocate their table before any element
  // arrives; the gateway only talks to its own Redis, so such counts are out of scope here.
  for (size_t at = bytes.find('*'); at != std::string_view::npos; at = bytes.find('*', at + 1)) {
    if (bytes.substr(at + 1, 7).find_first_not_of("0123456789-") >= 7) return 0;
  }
  bool whole_error = false;
  const std::vector<RedisValue> whole = readAll({bytes}, whole_error);

  const size_t n = bytes.size();
  std::vector<std::string_view> pieces;
  size_t at = 0;
  uint8_t step = data[0] == 0 ? 1 : data[0];
  while (at < n) {
    const size_t len = std::min<size_t>(n - at, 1 + (step % 17));
    pieces.push_back(bytes.substr(at, len));
    at += len;
    step = static_cast<uint8_t>(step * 31 + 7);
  }
  bool split_error = false;
  const std::vector<RedisValue> split = readAll(pieces, split_error);
  // A protocol error may surface at a different point, but the replies before it agree.
  const size_t common = std::min(whole.size(), split.size());
  for (size_t i = 0; i < common; ++i) check(equal(whole[i], split[i]));
  if (!whole_error && !split_error) check(whole.size() == split.size());
  return 0;
}
