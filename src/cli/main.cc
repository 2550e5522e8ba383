#include <CLI/CLI.hpp>

#include "core/version.h"
#include "gateway/gateway.h"

int main(int argc, char** argv) {
  CLI::App app{"Switchyard: an inference gateway for heterogeneous GPU fleets"};
  app.set_version_flag("--version", switchyard::versionString());
  app.require_subcommand(1);

  switchyard::gateway::GatewayOptions gateway_options;
  CLI::App* gateway = app.add_subcommand("gateway", "Run the gateway");
  gateway->add_option("--config", gateway_options.config_path, "YAML configuration file")
      ->required()
      ->check(CLI::ExistingFile);
  gateway->add_option("--listen", gateway_options.listen_override,
                      "client listener host:port (overrides the file)");
  gateway->add_option("--admin-listen", gateway_options.admin_listen_override,
                      "admin listener host:port (overrides the file)");

  CLI11_PARSE(app, argc, argv);
  if (gateway->parsed()) return switchyard::gateway::runGateway(gateway_options);
  return 0;
}
