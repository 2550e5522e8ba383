// RedisValue: a reply from Redis, copied out of hiredis's reply object so it can outlive the
// callback that delivered it. Replies here are small (an integer, a short string, a flat array).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct redisReply;

namespace switchyard::state::redis {

struct RedisValue {
  enum class Type : uint8_t { kNil, kInteger, kString, kStatus, kError, kArray };
  Type type = Type::kNil;
  int64_t integer = 0;
  std::string text;  // kString, kStatus, kError
  std::vector<RedisValue> elements;

  static RedisValue fromReply(const redisReply& reply);

  bool isInteger() const { return type == Type::kInteger; }
  bool isArray() const { return type == Type::kArray; }
  bool isNil() const { return type == Type::kNil; }
  // The integer at `index` of an array reply; `fallback` when absent or of another type.
  int64_t integerAt(size_t index, int64_t fallback = 0) const {
    return index < elements.size() && elements[index].isInteger() ? elements[index].integer
                                                                   : fallback;
  }
};

}  // namespace switchyard::state::redis
