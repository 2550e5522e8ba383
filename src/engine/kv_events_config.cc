#include "engine/kv_events_config.h"

#include <fmt/format.h>
#include <simdjson.h>

namespace switchyard::engine {

std::string parseKvEventsConfig(std::string_view json, KvEventsEndpoints& out) {
  out = {};
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  if (parser.parse(json.data(), json.size()).get_object().get(root)) {
    return "kv-events-config must be a JSON object";
  }
  bool enabled = false;
  std::string_view publisher = "null";
  std::string_view endpoint = "tcp://*:5557";  // vLLM's default
  std::string_view replay;
  for (auto [key, value] : root) {
    simdjson::error_code error = simdjson::SUCCESS;
    if (key == "enable_kv_cache_events") {
      error = value.get(enabled);
    } else if (key == "publisher") {
      error = value.get(publisher);
    } else if (key == "endpoint") {
      error = value.get(endpoint);
    } else if (key == "replay_endpoint") {
      error = value.is_null() ? simdjson::SUCCESS : value.get(replay);
    } else if (key != "topic" && key != "buffer_steps" && key != "hwm" && key != "max_queue_size") {
      return fmt::format("kv-events-config: unknown key '{}'", std::string_view(key));
    }
    if (error)
      return fmt::format("kv-events-config: '{}' has the wrong type", std::string_view(key));
  }
  if (publisher != "zmq" && publisher != "null") {
    return fmt::format("kv-events-config: publisher must be zmq or null, got '{}'", publisher);
  }
  if (!enabled || publisher == "null") return "";
  if (endpoint.empty()) return "kv-events-config: endpoint must not be empty";
  out.endpoint = endpoint;
  out.replay_endpoint = replay;
  return "";
}

}  // namespace switchyard::engine
