#include "core/text_file.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace switchyard {

std::optional<std::string> readTextFile(const std::string& path, std::string* error) {
  auto fail = [&](const char* why) -> std::optional<std::string> {
    if (error) *error = fmt::format("cannot read {}: {}", path, why);
    return std::nullopt;
  };
  // A directory opens as a stream on Linux and only fails on the first read, with an exception
  // some readers (yaml-cpp's) let through: refuse it up front. Pipes stay readable
  // (`--config <(envsubst < gateway.yaml)`).
  struct stat info {};
  if (path.empty()) return fail("empty path");
  if (::stat(path.c_str(), &info) != 0) return fail(std::strerror(errno));
  if (S_ISDIR(info.st_mode)) return fail("is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return fail("read error");
  return std::move(text).str();
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
