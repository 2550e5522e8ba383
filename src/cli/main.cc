#include <CLI/CLI.hpp>
#include <csignal>
#include <memory>

#include "cli/bench_command.h"
#include "cli/demo_command.h"
#include "cli/drain_wait_command.h"
#include "cli/keys_command.h"
#include "cli/optimize_command.h"
#include "cli/profile_command.h"
#include "cli/simulate_command.h"
#include "core/huge_pages.h"
#include "core/version.h"
#include "engine/engine_command.h"
#include "gateway/gateway.h"

int main(int argc, char** argv) {
  // A write to a peer that has gone (Redis killed, a client or replica reset) must be an EPIPE
  // error the caller handles, never the end of the process: Asio sends with MSG_NOSIGNAL, but
  // hiredis writes with plain send().
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"Switchyard: an inference gateway for heterogeneous GPU fleets"};
  app.set_version_flag("--version", switchyard::versionString());
  app.require_subcommand(1);

  // gateway: the client-facing gateway (src/gateway/gateway.h).
  switchyard::gateway::GatewayOptions gateway_options;
  CLI::App* gateway = app.add_subcommand("gateway", "Run the gateway");
  gateway->add_option("--config", gateway_options.config_path, "YAML configuration file")
      ->required()
      ->check(CLI::ExistingFile);
  gateway->add_option("--listen", gateway_options.listen_override,
                      "client listener host:port (overrides the file)");
  gateway->add_option("--admin-listen", gateway_options.admin_listen_override,
                      "admin listener host:port (overrides the file)");

  // engine: an emulated vLLM/SGLang replica (src/engine/engine_command.h).
  auto engine_options = std::make_shared<switchyard::engine::EngineCommandOptions>();
  CLI::App* engine_cmd = app.add_subcommand("engine", "Run an emulated inference engine replica");
  engine_cmd
      ->add_option("--gpu", engine_options->gpu,
                   "GPU profile: A10, L20, V100, A100 (= A100-80GB), H100, B200")
      ->capture_default_str();
  engine_cmd->add_option("--model", engine_options->model, "Model name served")
      ->capture_default_str();
  engine_cmd->add_option("--model-profile", engine_options->model_profile,
                         "Performance profile (default: --model if known, else llama2-7b)");
  engine_cmd->add_option("--tp", engine_options->tp, "Tensor-parallel GPUs per replica")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  engine_cmd->add_option("--listen", engine_options->listen, "HOST:PORT (port 0: OS-chosen)")
      ->capture_default_str();
  engine_cmd->add_option("--seed", engine_options->seed, "Seed for generated text and faults")
      ->capture_default_str();
  engine_cmd->add_option("--flavor", engine_options->flavor, "Metrics dialect: vllm or sglang")
      ->check(CLI::IsMember({"vllm", "sglang"}))
      ->capture_default_str();
  engine_cmd
      ->add_option("--profiles", engine_options->profiles_path,
                   "YAML replacing the built-in GPU/model profiles (data/profiles.yaml)")
      ->check(CLI::ExistingFile);
  engine_cmd
      ->add_option("--replicas", engine_options->replicas_path,
                   "YAML list of {listen, gpu, model, flavor, seed, tp}: host them all")
      ->check(CLI::ExistingFile);
  engine_cmd->add_option("--faults", engine_options->faults_json,
                         "Initial faults as JSON, as for POST /admin/faults");
  engine_cmd->add_flag("--no-prefix-caching", engine_options->no_prefix_caching,
                       "Disable prefix caching");
  engine_cmd->add_option("--num-scheduler-steps", engine_options->num_scheduler_steps,
                         "Decode steps per scheduling decision (vLLM multi-step scheduling)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  engine_cmd->add_flag("--no-chunked-prefill", engine_options->no_chunked_prefill,
                       "Prefill whole prompts in prefill-only steps (vLLM V0's scheduler)");
  engine_cmd->add_option("--kv-events-endpoint", engine_options->kv_events_endpoint,
                         "Publish KV-cache events as vLLM does: ZMQ PUB endpoint to bind, e.g. "
                         "tcp://127.0.0.1:5557");
  engine_cmd->add_option("--kv-events-replay-endpoint",
                         engine_options->kv_events_replay_endpoint,
                         "ZMQ ROUTER endpoint resending buffered KV-event batches on request");
  engine_cmd->add_option("--kv-events-config", engine_options->kv_events_config,
                         "vLLM's KV-event JSON, e.g. '{\"enable_kv_cache_events\": true, "
                         "\"publisher\": \"zmq\", \"endpoint\": \"tcp://127.0.0.1:5557\"}'");
  engine_cmd->add_option("--kv-events-encoding", engine_options->kv_events_encoding,
                         "KV events as maps tagged \"type\" (map, newer vLLM) or positional "
                         "arrays (array)");
  engine_cmd->add_option("--api-key", engine_options->api_key,
                         "As vLLM: /v1/* requires Authorization: Bearer KEY");
  engine_cmd->add_flag("--profile-table", engine_options->profile_table,
                       "Print predicted tokens/s per GPU for --model and exit");
  engine_cmd->add_option("--table-prompt-tokens", engine_options->table_prompt_tokens)
      ->capture_default_str();
  engine_cmd->add_option("--table-max-tokens", engine_options->table_max_tokens)
      ->capture_default_str();
  engine_cmd->add_option("--table-concurrency", engine_options->table_concurrency)
      ->delimiter(',')
      ->check(CLI::PositiveNumber);

  // bench: closed-loop load against one endpoint (src/cli/bench_command.h).
  switchyard::cli::BenchOptions bench_options;
  CLI::App* bench = app.add_subcommand("bench", "Closed-loop load against one endpoint");
  bench->add_option("--host", bench_options.host)->capture_default_str();
  bench->add_option("--port", bench_options.port)->required();
  bench->add_option("--model", bench_options.model)->capture_default_str();
  bench->add_option("--concurrency", bench_options.concurrency)->capture_default_str();
  bench->add_option("--requests", bench_options.requests)->capture_default_str();
  bench->add_option("--max-tokens", bench_options.max_tokens)->capture_default_str();
  bench->add_option("--prompt-words", bench_options.prompt_words)->capture_default_str();
  bench->add_option("--seed", bench_options.seed)->capture_default_str();

  // demo: the embedded default fleet + gateway + load (src/cli/demo_command.h).
  switchyard::cli::DemoOptions demo_options;
  CLI::App* demo =
      app.add_subcommand("demo", "Run an emulated heterogeneous fleet behind a gateway");
  demo->add_option("--seconds", demo_options.seconds, "measured seconds per strategy and load")
      ->capture_default_str();
  demo->add_option("--warmup", demo_options.warmup_seconds, "seconds of load before measuring")
      ->capture_default_str();
  demo->add_option("--capacity-seconds", demo_options.capacity_seconds,
                   "seconds to saturate one replica of each GPU type")
      ->capture_default_str();
  demo->add_option("--capacity-concurrency", demo_options.capacity_concurrency,
                   "closed-loop clients that saturate it")
      ->capture_default_str();
  demo->add_option("--loads", demo_options.loads,
                   "offered loads as fractions of the measured fleet capacity, e.g. 0.3,0.5,0.7")
      ->delimiter(',')
      ->capture_default_str();
  demo->add_option("--rate", demo_options.rate, "Poisson arrival rate, requests/s (replaces --loads)");
  demo->add_option("--mix", demo_options.mix,
                   "request mix name:weight:promptwords-min-max:outputtokens-min-max,... "
                   "(default chat:0.8:20-120:64-192,summarise:0.2:400-800:16-48)");
  demo->add_option("--slo-tpot-ms", demo_options.slo_tpot_ms, "goodput: TPOT limit per request")
      ->capture_default_str();
  demo->add_option("--slo-ttft-ms", demo_options.slo_ttft_ms,
                   "goodput: TTFT limit per request (0: none)")
      ->capture_default_str();
  demo->add_option("--seed", demo_options.seed)->capture_default_str();
  demo->add_option("--csv", demo_options.csv_path, "write one row per load x strategy x GPU type");
  demo->add_option("--oracle", demo_options.oracle,
                   "the `oracle` strategy's fixed assignment, class:GPU,... (e.g. chat:A10,code:L20)");
  demo->add_option("--gpu-costs", demo_options.gpu_costs,
                   "prices per replica-hour for the slo strategies, GPU:price,... "
                   "(e.g. A10:1.006,L20:1.861; default 1 each)");
  demo->add_option("--slo-profiles", demo_options.slo_profiles,
                   "profile files for the slo strategies, GPU:FILE,... (e.g. A10:a10.json; "
                   "default: emulated profiles)");
  demo->add_option("--gpus", demo_options.gpus, "emulated GPU, one replica each")
      ->delimiter(',');
  demo->add_option("--strategies", demo_options.strategies, "routing strategies to compare")
      ->delimiter(',');

  // simulate: the fleet simulator (src/cli/simulate_command.h, docs/simulation.md).
  switchyard::cli::SimulateOptions simulate_options;
  CLI::App* simulate =
      app.add_subcommand("simulate", "Simulate a fleet and its gateways on a virtual clock");
  simulate->add_option("--scenario", simulate_options.scenario_path, "scenario YAML file")
      ->required()
      ->check(CLI::ExistingFile);
  simulate->add_option("-o,--out", simulate_options.out_dir,
                       "directory for the summary, CSV series and PNG plots");
  simulate->add_option("--summary-json", simulate_options.summary_json,
                       "write the run's figures as JSON");
  simulate->add_option("--strategies", simulate_options.strategies,
                       "strategies to run (replaces the scenario's list)")
      ->delimiter(',');
  simulate->add_option("--scale", simulate_options.scale,
                       "multiply the fleet, replica events and the open-loop rate")
      ->capture_default_str();
  simulate->add_option("--duration", simulate_options.duration_s,
                       "seconds of arrivals (replaces duration_s)");
  simulate->add_option("--rate", simulate_options.rate,
                       "open-loop arrivals per second (replaces the scenario's rate or load)");
  simulate->add_option("--seed", simulate_options.seed, "replaces the scenario's seed");
  simulate->add_flag("!--no-progress", simulate_options.progress, "no progress bar");
  simulate->add_flag("!--no-routing-timer", simulate_options.time_routing,
                     "do not measure routing CPU per decision");
  // drain-wait: a vLLM Pod's preStop hook (src/cli/drain_wait_command.h).
  switchyard::cli::DrainWaitOptions drain_wait_options;
  CLI::App* drain_wait = app.add_subcommand(
      "drain-wait", "Drain a replica at the gateway and wait until its requests are done");
  drain_wait->add_option("--gateway", drain_wait_options.gateways,
                         "gateway admin URL http://HOST:PORT (repeat or comma-separate)")
      ->required();
  drain_wait->add_option("--pod", drain_wait_options.pod, "the Pod's name (or replica address)")
      ->required();
  drain_wait->add_option("--timeout", drain_wait_options.timeout,
                         "give up after this long (90s, 2m, or seconds)")
      ->capture_default_str();
  drain_wait->add_option("--interval", drain_wait_options.interval, "poll interval")
      ->capture_default_str();
  drain_wait->add_flag("!--no-drain", drain_wait_options.drain,
                       "only wait; do not ask the gateway to drain first");
  drain_wait->add_option("--token-file", drain_wait_options.token_file,
                         "file holding a bearer token for gateways with admin_auth "
                         "(default: $SWITCHYARD_ADMIN_TOKEN_FILE)");

  // profile, gen-profile, optimize: the GPU-mix optimizer (docs/optimizer.md).
  int command_exit = 0;
  switchyard::cli::addProfileCommands(app, command_exit);
  switchyard::cli::addOptimizeCommand(app, command_exit);
  // keys: the API keys file (docs/security.md).
  switchyard::cli::addKeysCommand(app, command_exit);

  CLI11_PARSE(app, argc, argv);
  for (const char* name : {"profile", "gen-profile", "optimize", "keys"}) {
    if (app.got_subcommand(name)) return command_exit;
  }
  if (simulate->parsed()) {
    switchyard::reexecWithHugePages(argv);  // a large heap read at random (core/huge_pages.h)
    return switchyard::cli::runSimulate(simulate_options);
  }
  if (drain_wait->parsed()) return switchyard::cli::runDrainWait(drain_wait_options);
  if (demo->parsed()) return switchyard::cli::runDemo(demo_options);
  if (bench->parsed()) return switchyard::cli::runBench(bench_options);
  if (gateway->parsed()) return switchyard::gateway::runGateway(gateway_options);
  if (engine_cmd->parsed()) return switchyard::engine::runEngineCommand(*engine_options);
  return 0;
}
