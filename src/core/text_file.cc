#include "core/text_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace switchyard {

std::optional<std::string> readTextFile(const std::string& path, std::string* error) {
  auto fail = [&](const char* why) -> std::optional<std::string> {
    if (error) *error = fmt::format("cannot read {}: {}", path, why);
    return std::nullopt;
  };
  if (path.empty()) return fail("empty path");
  // Plain read(2) rather than a stream: a stream reports a failed read only as a flag on the
  // copy's target (or, read through some libraries such as yaml-cpp, as an exception they let
  // through). A directory opens and would fail on its first read: named up front. Pipes stay
  // readable (`--config <(envsubst < gateway.yaml)`).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat info {};
  std::string out;
  if (::fstat(fd, &info) == 0) {
    if (S_ISDIR(info.st_mode)) {
      ::close(fd);
      return fail("is a directory");
    }
    if (S_ISREG(info.st_mode)) out.reserve(static_cast<size_t>(info.st_size));
  }
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      ::close(fd);
      return fail(std::strerror(saved));
    }
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

bool writeTextFile(const std::string& path, std::string_view text, std::string* error) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out) {
      if (error) *error = fmt::format("cannot write {}", tmp);
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    if (error) *error = fmt::format("cannot rename {} to {}", tmp, path);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace switchyard
