#include "core/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace switchyard {
namespace {

using namespace std::chrono_literals;

std::vector<uint16_t> portsOf(std::string_view line) {
  std::vector<uint16_t> ports;
  line.remove_prefix(std::string_view("listening ").size());
  while (!line.empty()) {
    size_t end = std::min(line.find(' '), line.size());
    std::string_view token = line.substr(0, end);
    line.remove_prefix(std::min(end + 1, line.size()));
    size_t colon = token.rfind(':');
    if (colon == std::string_view::npos) continue;
    ports.push_back(static_cast<uint16_t>(std::stoi(std::string(token.substr(colon + 1)))));
  }
  return ports;
}

int decodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv) {
  if (argv.empty()) throw std::runtime_error("ChildProcess: empty argv");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);  // dup2 clears CLOEXEC
  std::vector<char*> args;
  for (std::string& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  int error = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (error != 0) {
    close(fds[0]);
    throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(error));
  }
  stdout_fd_ = fds[0];
  reader_ = std::thread([this] { drainStdout(); });
}

ChildProcess::~ChildProcess() {
  if (!exit_status_) {
    sendSignal(SIGTERM);
    if (!waitExit(deadlineIn(5s))) {
      sendSignal(SIGKILL);
      int status = 0;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      exit_status_ = decodeStatus(status);
    }
  }
  {
    std::lock_guard lock(mutex_);
    stop_reader_ = true;
  }
  reader_.join();
  close(stdout_fd_);
}

void ChildProcess::drainStdout() {
  std::string partial;
  char buffer[4096];
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stop_reader_) return;
    }
    // Poll with a short timeout so the destructor can stop us even if a grandchild holds the pipe.
    pollfd fd{stdout_fd_, POLLIN, 0};
    int ready = poll(&fd, 1, 50);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    partial.append(buffer, static_cast<size_t>(n));
    std::lock_guard lock(mutex_);
    for (size_t newline; (newline = partial.find('\n')) != std::string::npos;) {
      lines_.push_back(partial.substr(0, newline));
      partial.erase(0, newline + 1);
    }
    changed_.notify_all();
  }
  std::lock_guard lock(mutex_);
  if (!partial.empty()) lines_.push_back(partial);
  stdout_closed_ = true;
  changed_.notify_all();
}

std::vector<uint16_t> ChildProcess::waitForListening(SteadyTime deadline) {
  std::unique_lock lock(mutex_);
  size_t checked = 0;
  for (;;) {
    for (; checked < lines_.size(); ++checked) {
      if (lines_[checked].rfind("listening ", 0) == 0) return portsOf(lines_[checked]);
    }
    if (stdout_closed_) return {};
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      if (checked == lines_.size()) return {};
    }
  }
}

std::vector<std::string> ChildProcess::stdoutLines() const {
  std::lock_guard lock(mutex_);
  return lines_;
}

std::vector<std::string> ChildProcess::allStdoutLines(SteadyTime deadline) {
  std::unique_lock lock(mutex_);
  changed_.wait_until(lock, deadline, [this] { return stdout_closed_; });
  return lines_;
}

void ChildProcess::sendSignal(int signal) {
  if (!exit_status_) kill(pid_, signal);
}

std::optional<int> ChildProcess::waitExit(SteadyTime deadline) {
  while (!exit_status_) {
    int status = 0;
    pid_t reaped = waitpid(pid_, &status, WNOHANG);
    if (reaped == pid_) {
      exit_status_ = decodeStatus(status);
      break;
    }
    if (reaped < 0 && errno != EINTR) {
      exit_status_ = -1;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    // waitpid has no timeout; poll at a fine grain (this is not waiting for a guess of time).
    std::this_thread::sleep_for(5ms);
  }
  return exit_status_;
}

}  // namespace switchyard
