#include "state/redis/redis_value.h"

#include <hiredis/hiredis.h>

namespace switchyard::state::redis {

RedisValue RedisValue::fromReply(const redisReply& reply) {
  RedisValue value;
  switch (reply.type) {
    case REDIS_REPLY_INTEGER:
      value.type = Type::kInteger;
      value.integer = reply.integer;
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      value.type = reply.type == REDIS_REPLY_STRING   ? Type::kString
                   : reply.type == REDIS_REPLY_STATUS ? Type::kStatus
                                                      : Type::kError;
      value.text.assign(reply.str, reply.len);
      break;
    case REDIS_REPLY_ARRAY:
      value.type = Type::kArray;
      value.elements.reserve(reply.elements);
      for (size_t i = 0; i < reply.elements; ++i) {
        value.elements.push_back(fromReply(*reply.element[i]));
      }
      break;
    default:
      break;
  }
  return value;
}

}  // namespace switchyard::state::redis
