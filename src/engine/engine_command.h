// `switchyard engine`: runs one emulated inference engine replica until SIGTERM/SIGINT.
#pragma once

#include <cstdint>
#include <string>

namespace switchyard::engine {

struct EngineCommandOptions {
  std::string gpu = "A100";
  std::string model = "llama2-7b";
  std::string listen = "127.0.0.1:8000";  // HOST:PORT; port 0 lets the OS choose
  std::string flavor = "vllm";            // vllm | sglang: the /metrics dialect
  uint64_t seed = 1;
};

// Validates the options, binds, prints exactly one line "listening HOST:PORT" to stdout (flushed),
// then serves. Returns 0 after a clean stop on SIGTERM/SIGINT, 2 on bad options, 1 when the
// server cannot start; errors go to stderr.
int runEngineCommand(const EngineCommandOptions& options);

}  // namespace switchyard::engine
