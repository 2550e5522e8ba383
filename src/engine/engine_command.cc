#include "engine/engine_command.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string_view>

#include "engine/engine_server.h"
#include "engine/fixed_rate_model.h"

namespace switchyard::engine {
namespace {

struct HostPort {
  std::string host;
  uint16_t port = 0;
};

// "HOST:PORT" or "[V6]:PORT"; "localhost" means 127.0.0.1.
std::optional<HostPort> parseListen(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return std::nullopt;
  }
  return HostPort{host == "localhost" ? "127.0.0.1" : std::string(host),
                  static_cast<uint16_t>(port)};
}

}  // namespace

int runEngineCommand(const EngineCommandOptions& options) {
  std::optional<HostPort> listen = parseListen(options.listen);
  if (!listen) {
    fmt::print(stderr, "engine: --listen must be HOST:PORT, got '{}'\n", options.listen);
    return 2;
  }
  std::optional<Flavor> flavor = parseFlavor(options.flavor);
  if (!flavor) {
    fmt::print(stderr, "engine: --flavor must be vllm or sglang, got '{}'\n", options.flavor);
    return 2;
  }
  if (options.model.empty()) {
    fmt::print(stderr, "engine: --model must not be empty\n");
    return 2;
  }
  std::unique_ptr<FixedRateModel> model;
  try {
    model = FixedRateModel::forGpu(options.gpu);
  } catch (const std::exception& e) {
    fmt::print(stderr, "engine: {}\n", e.what());
    return 2;
  }

  EngineServerOptions server_options;
  server_options.host = listen->host;
  server_options.port = listen->port;
  server_options.model = options.model;
  server_options.flavor = *flavor;
  server_options.seed = options.seed;
  try {
    EngineServer server(std::move(server_options), std::move(model));
    std::string bound = server.listen();
    // Tests and scripts read this line to learn the port.
    fmt::print(stdout, "listening {}\n", bound);
    std::fflush(stdout);
    server.run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "engine: {}\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace switchyard::engine
