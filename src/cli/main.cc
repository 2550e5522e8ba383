#include <CLI/CLI.hpp>

#include "core/version.h"

int main(int argc, char** argv) {
  CLI::App app{"Switchyard: an inference gateway for heterogeneous GPU fleets"};
  app.set_version_flag("--version", switchyard::versionString());
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
