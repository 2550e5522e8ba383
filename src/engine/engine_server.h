// EngineServer: the HTTP face of an emulated inference engine (`switchyard engine`).
//
// Serves the OpenAI API subset a gateway needs (chat/completions with SSE streaming, embeddings,
// models), /health and a vLLM- or SGLang-shaped /metrics, and drives an EngineModel in real time:
// a timer fires at the model's next event time (and on every submit), advances the model, and
// wakes the request coroutines whose tokens are due. Replacing the EngineModel changes the
// performance of the emulated GPU and nothing else.
//
// One io_context on the thread that calls run(); all state lives on that thread. HTTP/1.1 with
// keep-alive; an idle connection is closed after `idle_timeout` (uvicorn's default is 5 s). Boost
// is confined to engine_server.cc.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine_model.h"
#include "engine/openai_emulation.h"

namespace switchyard::engine {

struct EngineServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: chosen by the OS
  std::string model = "llama2-7b";
  Flavor flavor = Flavor::kVllm;
  uint64_t seed = 1;  // token text, embeddings and response ids
  std::chrono::milliseconds idle_timeout{5000};
  std::chrono::milliseconds read_timeout{30000};   // header-to-end-of-body of one request
  std::chrono::milliseconds write_timeout{30000};  // each write to a slow client
  size_t max_body_bytes = 16u << 20;
  bool handle_signals = true;  // SIGTERM / SIGINT make run() return
};

class EngineServer {
 public:
  EngineServer(EngineServerOptions options, std::unique_ptr<EngineModel> model);
  ~EngineServer();
  EngineServer(const EngineServer&) = delete;
  EngineServer& operator=(const EngineServer&) = delete;

  // Binds and listens; returns the bound "host:port". Throws std::exception on failure
  // (start-up only).
  std::string listen();
  // Serves until stop() or a handled signal; then closes every connection, aborts requests in
  // flight and returns once nothing is left running. Call listen() first, from the same thread.
  void run();
  // Thread-safe and idempotent.
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::engine
