// FileStamp: what tells a watched file changed (modification time and size), for reloads that
// poll instead of waiting on inotify. A missing file has the default stamp.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "core/clock.h"

namespace switchyard {

struct FileStamp {
  int64_t mtime_ns = -1;
  int64_t size = -1;
  int64_t inode = -1;  // a file replaced by rename (an atomic write) changes it
  bool operator==(const FileStamp&) const = default;
};

inline FileStamp stampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<int64_t>(st.st_mtim.tv_sec) * kNsPerSec + st.st_mtim.tv_nsec,
          static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_ino)};
}

}  // namespace switchyard
