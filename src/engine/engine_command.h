// `switchyard engine`: runs emulated inference engine replicas until SIGTERM/SIGINT.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::engine {

struct EngineCommandOptions {
  std::string gpu = "A100";               // a GPU profile name or alias (A100 = A100-80GB)
  std::string model = "llama2-7b";        // the served model name
  std::string model_profile;              // performance profile; empty: --model if known,
                                          // else llama2-7b
  int tp = 1;                             // tensor parallel GPUs per replica
  std::string listen = "127.0.0.1:8000";  // HOST:PORT; port 0 lets the OS choose
  std::string flavor = "vllm";            // vllm | sglang: the /metrics dialect
  uint64_t seed = 1;
  std::string profiles_path;  // YAML replacing the built-in profiles; empty: built in
  std::string replicas_path;  // YAML list of replicas; replaces the single-replica flags
  std::string faults_json;    // initial faults, as accepted by POST /admin/faults
  std::string api_key;        // as vLLM's --api-key: /v1/* requires this bearer key
  bool no_prefix_caching = false;
  int num_scheduler_steps = 1;      // > 1: vLLM's multi-step scheduling (--num-scheduler-steps)
  bool no_chunked_prefill = false;  // vLLM V0's prefill-only steps
  // KV-cache events (vLLM's ZMQ publisher): PUB and ROUTER replay endpoints bound by the
  // replica ("" none), and the event encoding: map (newer vLLM) or array (older).
  std::string kv_events_endpoint;
  std::string kv_events_replay_endpoint;
  std::string kv_events_encoding = "map";
  std::string kv_events_config;  // vLLM's --kv-events-config JSON (engine/kv_events_config.h)
  bool profile_table = false;  // print predicted tokens/s per GPU and exit
  int table_prompt_tokens = 32;
  int table_max_tokens = 128;
  std::vector<int> table_concurrency = {1, 16, 64};
};

// Validates the options, binds every replica, prints exactly one line
// "listening HOST:PORT [HOST:PORT ...]" to stdout (flushed, in replica order), then serves.
// Returns 0 after a clean stop on SIGTERM/SIGINT, 2 on bad options (unknown GPU or model, a model
// that does not fit, a malformed file), 1 when a server cannot start; errors go to stderr.
int runEngineCommand(const EngineCommandOptions& options);

}  // namespace switchyard::engine
