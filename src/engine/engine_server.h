// EngineHost: the HTTP face of emulated inference engines (`switchyard engine`).
//
// Hosts one or more replicas, each on its own listener with its own EngineModel, all on one
// io_context served by the thread that calls run() (a 16-replica fleet costs one thread). Each
// replica serves the OpenAI API subset a gateway needs (chat/completions with SSE streaming,
// embeddings, models), /health, a vLLM- or SGLang-shaped /metrics and /admin/faults, and drives
// its model in real time: a timer fires at the model's next event time (and on every submit),
// advances the model, and wakes the request coroutines whose tokens are due. Replacing the
// EngineModel changes the performance of the emulated GPU and nothing else.
//
// All state lives on the run() thread. HTTP/1.1 with keep-alive; an idle connection is closed
// after `idle_timeout` (uvicorn's default is 5 s). Boost is confined to engine_server.cc.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine_model.h"
#include "engine/faults.h"
#include "engine/openai_emulation.h"

namespace switchyard::engine {

struct EngineServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: chosen by the OS
  std::string model = "llama2-7b";
  Flavor flavor = Flavor::kVllm;
  uint64_t seed = 1;          // token text, embeddings, response ids and fault draws
  FaultConfig faults;         // active from the start
  bool prefix_hashes = true;  // send prompt block hashes to the model (prefix caching)
  std::chrono::milliseconds idle_timeout{5000};
  std::chrono::milliseconds read_timeout{30000};   // header-to-end-of-body of one request
  std::chrono::milliseconds write_timeout{30000};  // each write to a slow client
  size_t max_body_bytes = 16u << 20;
  // As vLLM's --api-key: /v1/* answers 401 unless `Authorization: Bearer API_KEY`. "" open.
  std::string api_key;
  // KV-cache events as vLLM's ZMQ publisher (engine/kv_event_publisher.h); "" publishes none.
  std::string kv_events_endpoint;
  std::string kv_events_replay_endpoint;
  bool kv_events_array = false;  // positional-array events instead of maps tagged "type"
};

class EngineHost {
 public:
  // With `handle_signals`, SIGTERM / SIGINT make run() return.
  explicit EngineHost(bool handle_signals = true);
  ~EngineHost();
  EngineHost(const EngineHost&) = delete;
  EngineHost& operator=(const EngineHost&) = delete;

  // Binds a new replica and returns its bound "host:port". Throws std::exception on failure
  // (start-up only). Call before run(), from the same thread.
  std::string add(EngineServerOptions options, std::unique_ptr<EngineModel> model);
  // Serves until stop() or a handled signal; then closes every connection, aborts requests in
  // flight and returns once nothing is left running.
  void run();
  // Thread-safe and idempotent.
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::engine
