#include "core/file_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace switchyard {
namespace {

// An RLIM_INFINITY hard limit cannot be the soft one for files: the kernel caps descriptors
// at fs.nr_open.
uint64_t kernelFileCap() {
  std::ifstream in("/proc/sys/fs/nr_open");
  uint64_t cap = 0;
  if (in >> cap && cap > 0) return cap;
  return 1u << 20;  // the kernel's default nr_open
}

}  // namespace

FileLimit raiseFileLimit() {
  FileLimit out;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    out.error = std::string("getrlimit: ") + std::strerror(errno);
    return out;
  }
  out.before = out.soft = limit.rlim_cur;
  out.hard = limit.rlim_max == RLIM_INFINITY ? kernelFileCap() : limit.rlim_max;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= out.hard) return out;
  rlimit wanted = limit;
  wanted.rlim_cur = out.hard;
  if (::setrlimit(RLIMIT_NOFILE, &wanted) != 0) {
    out.error = std::string("setrlimit: ") + std::strerror(errno);
    return out;
  }
  out.soft = out.hard;
  return out;
}

}  // namespace switchyard
