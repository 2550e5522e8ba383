// Fuzz target: the gateway's YAML configuration (gateway/config.h), security sections included.
// Any text must be accepted or refused with ConfigError, never crash or hang.
#include <cstdint>
#include <string>

#include "gateway/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const switchyard::gateway::GatewayConfig config = switchyard::gateway::parseConfig(text);
    (void)config;
  } catch (const switchyard::gateway::ConfigError&) {
  }
  return 0;
}
