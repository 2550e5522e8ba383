#include "state/redis/profile_store.h"

#include <fmt/format.h>

#include "core/text_file.h"

namespace switchyard::state::redis {

std::string profileKey(std::string_view model, std::string_view deployment) {
  return fmt::format("aibrix:profile_{}_{}", model, deployment);
}

bool storeProfile(const RedisUrl& url, const profile::GpuProfile& profile, std::string* error,
                  std::string* key_out) {
  const std::string model = url.model.empty() ? profile.model : url.model;
  if (model.empty()) {
    if (error) *error = "the Redis URL needs ?model=M (AIBrix keys profiles by model)";
    return false;
  }
  BlockingRedis redis;
  if (!redis.connect(url)) {
    if (error) *error = redis.error();
    return false;
  }
  const std::string key = profileKey(model, profile.deployment);
  auto reply = redis.command({"SET", key, profile::profileToJson(profile)});
  if (!reply || reply->type == RedisValue::Type::kError) {
    if (error) *error = reply ? "Redis SET failed: " + reply->text : redis.error();
    return false;
  }
  if (key_out) *key_out = key;
  return true;
}

profile::ProfileParse loadProfileSource(const std::string& source, std::string_view deployment,
                                        std::string_view model) {
  profile::ProfileParse result;
  if (!RedisUrl::isRedisUrl(source)) {
    std::string error;
    const auto text = readTextFile(source, &error);
    if (!text) {
      result.error = error;
      return result;
    }
    result = profile::parseProfileJson(*text);
    if (!result.profile) result.error = fmt::format("profile {}: {}", source, result.error);
    return result;
  }
  std::string error;
  const auto url = RedisUrl::parse(source, &error);
  if (!url) {
    result.error = error;
    return result;
  }
  const std::string_view key_model = url->model.empty() ? model : std::string_view(url->model);
  if (key_model.empty() || deployment.empty()) {
    result.error = fmt::format("profile source {}: needs ?model=M and a deployment name", source);
    return result;
  }
  BlockingRedis redis;
  if (!redis.connect(*url)) {
    result.error = fmt::format("profile source {}: {}", source, redis.error());
    return result;
  }
  const std::string key = profileKey(key_model, deployment);
  auto reply = redis.command({"GET", key});
  if (!reply) {
    result.error = fmt::format("profile source {}: {}", source, redis.error());
    return result;
  }
  if (reply->type != RedisValue::Type::kString) {
    result.error = fmt::format("profile {} not found in Redis at {}:{}", key, url->host, url->port);
    return result;
  }
  result = profile::parseProfileJson(reply->text);
  if (!result.profile) {
    result.error = fmt::format("profile {} in Redis: {}", key, result.error);
  } else if (result.profile->model.empty()) {
    result.profile->model = std::string(key_model);
  }
  return result;
}

}  // namespace switchyard::state::redis
