// A gateway out of file descriptors keeps its process usable: its listeners pause and retry
// instead of spinning on a backlog they cannot accept, log it without flooding the log, and serve
// again once descriptors free up.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gateway_harness.h"

namespace switchyard::testing {
namespace {


size_t openDescriptors(pid_t pid) {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++count;
  }
  return count;
}

// User plus system CPU of the process so far, in clock ticks.
long cpuTicks(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

// The sanitizers need descriptors of their own: UBSan's vptr check opens a pipe to test whether
// memory is readable, and at EMFILE it reports every such check as an invalid object.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST(DescriptorLimitTest, ListenersOutOfDescriptorsPauseAndServeAgainAfterwards) {
  if (kSanitized) GTEST_SKIP() << "sanitizer build: the sanitizers fail without descriptors";
  const auto engine = startEngine("A100");
  const TempFile config("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
                        "models:\n  - name: llama2-7b\n    replicas:\n" +
                            replicaLine(engine->port(), "A100"),
                        ".yaml");
  Process gateway({"gateway", "--config", config.path()});
  const pid_t pid = gateway.child().pid();
  ASSERT_EQ(httpRequest(gateway.port(), "POST", "/v1/chat/completions", chatBody("llama2-7b", 1),
                        kJson, 10s)
                .status,
            200);

  // A few descriptors above what the gateway holds; then more connections than that to both
  // listeners, so that each meets EMFILE with connections still waiting in its backlog.
  rlimit original{};
  ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, nullptr, &original), 0);
  rlimit lowered = original;
  lowered.rlim_cur = openDescriptors(pid) + 4;
  ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, &lowered, nullptr), 0);
  std::vector<int> connections;
  for (int i = 0; i < 24; ++i) {
    for (const uint16_t port : {gateway.port(0), gateway.port(1)}) {
      const int fd = connectTo(port);
      if (fd >= 0) connections.push_back(fd);
    }
  }
  std::this_thread::sleep_for(300ms);
  EXPECT_GE(openDescriptors(pid), lowered.rlim_cur - 1);  // the limit was reached

  // A listener retrying at once would keep a core busy; pausing costs next to nothing.
  const long before = cpuTicks(pid);
  std::this_thread::sleep_for(1500ms);
  const double cpu_seconds =
      static_cast<double>(cpuTicks(pid) - before) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  EXPECT_LT(cpu_seconds, 0.5);
  // Each listener says so once, not at every retry (20 a second).
  size_t failure_lines = 0;
  for (const std::string& line : gateway.child().stdoutLines()) {
    failure_lines += line.find("accept failed") != std::string::npos;
  }
  EXPECT_GE(failure_lines, 1u);
  EXPECT_LE(failure_lines, 2u);  // the worker's listener and the admin listener

  for (const int fd : connections) ::close(fd);
  ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, &original, nullptr), 0);
  EXPECT_TRUE(waitUntil([&] { return httpRequest(gateway.port(1), "GET", "/metrics").ok(); }, 5s));
  EXPECT_TRUE(waitUntil(
      [&] {
        return httpRequest(gateway.port(), "POST", "/v1/chat/completions",
                           chatBody("llama2-7b", 1), kJson, 5s)
                   .status == 200;
      },
      15s));
}

}  // namespace
}  // namespace switchyard::testing
