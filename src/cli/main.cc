#include <CLI/CLI.hpp>
#include <memory>

#include "cli/demo_command.h"
#include "core/version.h"
#include "engine/engine_command.h"
#include "gateway/gateway.h"

int main(int argc, char** argv) {
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
  engine_cmd->add_option("--gpu", engine_options->gpu, "GPU type: A10, L20, V100, A100, H100, B200")
      ->capture_default_str();
  engine_cmd->add_option("--model", engine_options->model, "Model name served")
      ->capture_default_str();
  engine_cmd->add_option("--listen", engine_options->listen, "HOST:PORT (port 0: OS-chosen)")
      ->capture_default_str();
  engine_cmd->add_option("--seed", engine_options->seed, "Seed for generated text")
      ->capture_default_str();
  engine_cmd->add_option("--flavor", engine_options->flavor, "Metrics dialect: vllm or sglang")
      ->check(CLI::IsMember({"vllm", "sglang"}))
      ->capture_default_str();

  // demo: the embedded default fleet + gateway + load (src/cli/demo_command.h).
  switchyard::cli::DemoOptions demo_options;
  CLI::App* demo = app.add_subcommand("demo", "Run an emulated heterogeneous fleet behind a gateway");
  demo->add_option("--requests", demo_options.requests, "requests per strategy")
      ->capture_default_str();
  demo->add_option("--rate", demo_options.rate, "Poisson arrival rate, requests/s")
      ->capture_default_str();
  demo->add_option("--max-tokens", demo_options.max_tokens, "output tokens per request")
      ->capture_default_str();
  demo->add_option("--gpus", demo_options.gpus, "emulated GPU types, one replica each");
  demo->add_option("--strategies", demo_options.strategies, "routing strategies to compare");

  CLI11_PARSE(app, argc, argv);
  if (demo->parsed()) return switchyard::cli::runDemo(demo_options);
  if (gateway->parsed()) return switchyard::gateway::runGateway(gateway_options);
  if (engine_cmd->parsed()) return switchyard::engine::runEngineCommand(*engine_options);
  return 0;
}
