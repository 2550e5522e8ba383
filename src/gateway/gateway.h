// Gateway: wires the control plane and the hot-path workers together.
//
// run() binds the listeners, prints `listening CLIENT_ADDR ADMIN_ADDR` on stdout (tests and
// scripts read it), starts one worker thread per core, and runs the control plane on the calling
// thread: telemetry scraping, config reload (SIGHUP or a changed file), the admin listener, and
// graceful shutdown on SIGTERM/SIGINT (stop accepting, let requests in flight finish within the
// grace period, exit). Returns the process exit code.
#pragma once

#include <string>

#include "gateway/config.h"

namespace switchyard::gateway {

struct GatewayOptions {
  std::string config_path;
  std::string listen_override;        // --listen
  std::string admin_listen_override;  // --admin-listen
};

int runGateway(const GatewayOptions& options);

}  // namespace switchyard::gateway
