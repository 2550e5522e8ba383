// vLLM's `--kv-events-config` for the engine emulator: the JSON vLLM takes to publish KV-cache
// events, so a fleet's launch line works against the emulator unchanged.
//
//   {"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:5557",
//    "replay_endpoint": "tcp://*:5558", "topic": "", "buffer_steps": 10000, "hwm": 100000,
//    "max_queue_size": 100000}
//
// Events are published when enable_kv_cache_events is true and the publisher is "zmq" (vLLM's
// default endpoint when none is given); "null" or disabled publishes nothing. topic,
// buffer_steps, hwm and max_queue_size are accepted and not modelled. Anything else is an error.
#pragma once

#include <string>
#include <string_view>

namespace switchyard::engine {

struct KvEventsEndpoints {
  std::string endpoint;         // PUB; empty: no events
  std::string replay_endpoint;  // ROUTER; empty: no replay
};

// Parses `json` into `out`; returns "" or what is wrong with it.
std::string parseKvEventsConfig(std::string_view json, KvEventsEndpoints& out);

}  // namespace switchyard::engine
