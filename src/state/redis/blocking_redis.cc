#include "state/redis/blocking_redis.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <charconv>

namespace switchyard::state::redis {
namespace {

bool toInt(std::string_view text, int& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

timeval toTimeval(TimeNs ns) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ns / kNsPerSec);
  tv.tv_usec = static_cast<suseconds_t>((ns % kNsPerSec) / 1000);
  return tv;
}

}  // namespace

std::optional<RedisUrl> RedisUrl::parse(std::string_view text, std::string* error) {
  auto fail = [&](std::string message) -> std::optional<RedisUrl> {
    if (error) *error = fmt::format("bad Redis URL '{}': {}", text, message);
    return std::nullopt;
  };
  if (!isRedisUrl(text)) return fail("expected redis://host:port/?model=M");
  RedisUrl url;
  std::string_view rest = text.substr(8);
  const size_t question = rest.find('?');
  std::string_view query = question == std::string_view::npos ? "" : rest.substr(question + 1);
  rest = rest.substr(0, question);
  const size_t slash = rest.find('/');
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  std::string_view authority = rest.substr(0, slash);
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view user_info = authority.substr(0, at);
    const size_t colon = user_info.find(':');
    url.password = colon == std::string_view::npos ? user_info : user_info.substr(colon + 1);
    authority = authority.substr(at + 1);
  }
  if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    if (!toInt(authority.substr(colon + 1), url.port) || url.port < 1 || url.port > 65535) {
      return fail("the port must be 1-65535");
    }
    authority = authority.substr(0, colon);
  }
  if (!authority.empty()) url.host = authority;
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (!path.empty() && (!toInt(path, url.database) || url.database < 0)) {
    return fail("the database must be a number");
  }
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? "" : query.substr(amp + 1);
    if (pair.starts_with("model=")) url.model = pair.substr(6);
  }
  return url;
}

BlockingRedis::~BlockingRedis() { drop(); }

void BlockingRedis::drop() {
  if (context_ != nullptr) redisFree(context_);
  context_ = nullptr;
}

bool BlockingRedis::connect(const RedisUrl& url, TimeNs timeout) {
  drop();
  context_ = redisConnectWithTimeout(url.host.c_str(), url.port, toTimeval(timeout));
  if (context_ == nullptr || context_->err) {
    error_ = fmt::format("cannot connect to Redis at {}:{}: {}", url.host, url.port,
                         context_ ? context_->errstr : "out of memory");
    drop();
    return false;
  }
  redisSetTimeout(context_, toTimeval(timeout));
  if (!url.password.empty()) {
    auto reply = command({"AUTH", url.password});
    if (!reply || reply->type == RedisValue::Type::kError) {
      error_ = "Redis AUTH failed";
      drop();
      return false;
    }
  }
  if (url.database != 0) {
    auto reply = command({"SELECT", std::to_string(url.database)});
    if (!reply || reply->type == RedisValue::Type::kError) {
      error_ = fmt::format("Redis SELECT {} failed", url.database);
      drop();
      return false;
    }
  }
  return true;
}

std::optional<RedisValue> BlockingRedis::command(const std::vector<std::string>& args) {
  if (context_ == nullptr) {
    error_ = "not connected to Redis";
    return std::nullopt;
  }
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data()));
  if (reply == nullptr) {
    error_ = fmt::format("Redis command failed: {}", context_->errstr);
    drop();
    return std::nullopt;
  }
  RedisValue value = RedisValue::fromReply(*reply);
  freeReplyObject(reply);
  return value;
}

std::optional<std::vector<std::string>> BlockingRedis::scan(const std::string& pattern) {
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    auto reply = command({"SCAN", cursor, "MATCH", pattern, "COUNT", "500"});
    if (!reply) return std::nullopt;
    if (!reply->isArray() || reply->elements.size() != 2) {
      error_ = "unexpected SCAN reply";
      return std::nullopt;
    }
    cursor = reply->elements[0].text;
    for (const RedisValue& key : reply->elements[1].elements) keys.push_back(key.text);
  } while (cursor != "0");
  return keys;
}

}  // namespace switchyard::state::redis
