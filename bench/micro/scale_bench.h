// What the at-scale benchmarks share: the Redis they run against (SWITCHYARD_BENCH_REDIS=
// host:port, a server of the benchmark's own), what it spent (redis-cli INFO before and after the
// measured window), this process's CPU, and running an io_context for a while.
#pragma once

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace switchyard::bench {

struct RedisTarget {
  std::string address;  // host:port
  std::string host;
  std::string port;
};

// The server to measure, or nullopt when SWITCHYARD_BENCH_REDIS is not set.
inline std::optional<RedisTarget> benchRedis() {
  const char* address = std::getenv("SWITCHYARD_BENCH_REDIS");
  if (address == nullptr || *address == '\0') return std::nullopt;
  RedisTarget target;
  target.address = address;
  target.host = target.address.substr(0, target.address.rfind(':'));
  target.port = target.address.substr(target.address.rfind(':') + 1);
  return target;
}

// The server, or nullopt after marking the benchmark skipped when none is named.
inline std::optional<RedisTarget> benchRedisOrSkip(benchmark::State& state) {
  std::optional<RedisTarget> target = benchRedis();
  if (!target) state.SkipWithError("set SWITCHYARD_BENCH_REDIS=host:port to run");
  return target;
}

// Runs `io` for `duration` of wall time, then stops it (it can be run again).
inline void runFor(boost::asio::io_context& io, std::chrono::milliseconds duration) {
  boost::asio::steady_timer timer(io);
  timer.expires_after(duration);
  timer.async_wait([&](const boost::system::error_code&) { io.stop(); });
  io.restart();
  io.run();
}

struct RedisCost {
  double cpu_seconds = 0;  // used_cpu_sys + used_cpu_user
  double bytes = 0;        // total_net_input_bytes + total_net_output_bytes
};

inline RedisCost redisCost(const RedisTarget& target) {
  const std::string command = "redis-cli -h " + target.host + " -p " + target.port +
                              " INFO everything";
  RedisCost cost;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return cost;
  char line[512];
  while (fgets(line, sizeof line, pipe)) {
    double v = 0;
    if (sscanf(line, "used_cpu_sys:%lf", &v) == 1 || sscanf(line, "used_cpu_user:%lf", &v) == 1) {
      cost.cpu_seconds += v;
    } else if (sscanf(line, "total_net_input_bytes:%lf", &v) == 1 ||
               sscanf(line, "total_net_output_bytes:%lf", &v) == 1) {
      cost.bytes += v;
    }
  }
  pclose(pipe);
  return cost;
}

// This process's CPU seconds (user + system) so far.
inline double processCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace switchyard::bench
