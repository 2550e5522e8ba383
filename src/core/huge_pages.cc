#include "core/huge_pages.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>

namespace switchyard {

std::string hugePageTunables(const char* current, const std::string& thp_mode) {
  constexpr std::string_view kTunable = "glibc.malloc.hugetlb";
  const std::string_view existing = current == nullptr ? std::string_view{} : current;
  if (existing.find(kTunable) != std::string_view::npos) return "";  // set already, or opted out
  // "always [madvise] never": the bracketed word is the mode in force.
  if (thp_mode.empty() || thp_mode.find("[never]") != std::string::npos) return "";
  std::string value(existing);
  if (!value.empty()) value += ':';
  value += kTunable;
  value += "=1";
  return value;
}

void reexecWithHugePages(char** argv) {
  std::ifstream mode_file("/sys/kernel/mm/transparent_hugepage/enabled");
  const std::string mode((std::istreambuf_iterator<char>(mode_file)),
                         std::istreambuf_iterator<char>());
  const char* before = std::getenv("GLIBC_TUNABLES");
  const std::string tunables = hugePageTunables(before, mode);
  if (tunables.empty()) return;
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) return;
  self[length] = '\0';
  const std::string saved = before == nullptr ? "" : before;
  const bool was_set = before != nullptr;
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  execv(self, argv);
  // The exec failed: go on as before.
  if (was_set) {
    setenv("GLIBC_TUNABLES", saved.c_str(), 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

}  // namespace switchyard
