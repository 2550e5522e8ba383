// Test binaries that hold hiredis connections in-process (redis_tests, integration_tests) treat
// a write to a killed Redis as the gateway does: an EPIPE error, not the end of the run.
#include <csignal>

namespace {
const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();
}  // namespace
