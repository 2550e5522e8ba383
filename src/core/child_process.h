// ChildProcess: a child program with its stdout piped back (drained continuously by a
// background thread, so a chatty child never blocks) and its stderr shared with ours.
// Used by `switchyard demo` to run engines and a gateway, and by the integration tests.
// Waits are bounded by deadlines. The destructor sends SIGTERM, waits up to 5 s, then SIGKILL;
// it always reaps the child.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace switchyard {

using SteadyTime = std::chrono::steady_clock::time_point;

inline SteadyTime deadlineIn(std::chrono::milliseconds timeout) {
  return std::chrono::steady_clock::now() + timeout;
}

class ChildProcess {
 public:
  // argv[0] is the program's path (no PATH search). Throws std::runtime_error if it cannot start.
  explicit ChildProcess(std::vector<std::string> argv);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Waits for a stdout line starting with "listening " and returns the port of each HOST:PORT
  // token after it (e.g. "listening 127.0.0.1:4000 127.0.0.1:4001" -> {4000, 4001}). Empty when
  // the deadline passes or stdout closes first.
  std::vector<uint16_t> waitForListening(SteadyTime deadline);
  // Every complete stdout line so far.
  std::vector<std::string> stdoutLines() const;
  // Every stdout line, once the child's stdout has closed (it exited, and so did whatever
  // inherited the pipe) or the deadline passed: after waitExit() the reader thread may not have
  // read the pipe's last bytes yet.
  std::vector<std::string> allStdoutLines(SteadyTime deadline);
  void sendSignal(int signal);
  // The exit code, or 128 + the signal number if a signal ended it; nullopt at the deadline.
  std::optional<int> waitExit(SteadyTime deadline);

 private:
  void drainStdout();

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::optional<int> exit_status_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;  // guarded by mutex_
  bool stdout_closed_ = false;      // guarded by mutex_
  bool stop_reader_ = false;        // guarded by mutex_
  std::thread reader_;
};

}  // namespace switchyard
