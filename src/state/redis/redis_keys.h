// Builds the Redis keys of the layout documented in redis_backend.h.
#pragma once

#include <string>
#include <string_view>

namespace switchyard::state::redis {

class RedisKeys {
 public:
  explicit RedisKeys(std::string prefix) : prefix_(std::move(prefix)) {}

  std::string live(std::string_view model) const { return modelKey(model, "live", {}); }
  std::string run(std::string_view model, std::string_view replica) const {
    return modelKey(model, "run:", replica);
  }
  std::string tokens(std::string_view model, std::string_view replica) const {
    return modelKey(model, "tok:", replica);
  }
  // In-flight slots leased by gateways' workers (field "GATEWAY#INCARNATION#WORKER").
  std::string slots(std::string_view model, std::string_view replica) const {
    return modelKey(model, "slots:", replica);
  }
  // The model's change version and its replicas' last change versions (readers of changes).
  std::string version(std::string_view model) const { return modelKey(model, "ver", {}); }
  std::string changes(std::string_view model) const { return modelKey(model, "chg", {}); }
  std::string runPrefix(std::string_view model) const { return modelKey(model, "run:", {}); }
  std::string tokensPrefix(std::string_view model) const { return modelKey(model, "tok:", {}); }
  // Telemetry sharing is fleet-wide: one hash tag for both keys.
  std::string telemetryLive() const { return prefix_ + ":{telemetry}:live"; }
  std::string signals() const { return prefix_ + ":{telemetry}:signals"; }
  std::string rate(std::string_view model) const { return modelKey(model, "rate", {}); }
  std::string session(std::string_view model, std::string_view session) const {
    return modelKey(model, "sess:", session);
  }
  // Coordination keys, each tagged with its own name.
  std::string lease(std::string_view name) const { return taggedKey("lease", name); }
  std::string marks(std::string_view set) const { return taggedKey("marks", set); }
  // An API key's budgets ("req", "tok"), tagged by the key's name: "sy:{q:NAME}:req".
  std::string quota(std::string_view key, std::string_view bucket) const {
    std::string out;
    out.reserve(prefix_.size() + key.size() + bucket.size() + 7);
    out.append(prefix_).append(":{q:").append(key).append("}:").append(bucket);
    return out;
  }
  std::string job(std::string_view job_id) const {
    std::string key;
    key.reserve(prefix_.size() + job_id.size() + 7);
    key.append(prefix_).append(":job:{").append(job_id).append("}");
    return key;
  }

 private:
  std::string taggedKey(std::string_view kind, std::string_view name) const {
    std::string key;
    key.reserve(prefix_.size() + kind.size() + name.size() + 5);
    key.append(prefix_).push_back(':');
    key.append(kind).append(":{").append(name).append("}");
    return key;
  }
  std::string modelKey(std::string_view model, std::string_view kind,
                       std::string_view name) const {
    std::string key;
    key.reserve(prefix_.size() + model.size() + kind.size() + name.size() + 4);
    key.append(prefix_).append(":{").append(model).append("}:").append(kind).append(name);
    return key;
  }

  std::string prefix_;
};

}  // namespace switchyard::state::redis
