// The process's open-files limit (RLIMIT_NOFILE). Every client connection, upstream connection
// and listener holds a descriptor, so a gateway meant for tens of thousands of connections
// raises its soft limit to the hard one at start and says so when even that is low.
#pragma once

#include <cstdint>
#include <string>

namespace switchyard {

struct FileLimit {
  uint64_t before = 0;  // the soft limit found
  uint64_t soft = 0;    // the soft limit in force afterwards
  uint64_t hard = 0;
  std::string error;    // why it could not be read or raised ("" when fine)
};

// Descriptors below which a gateway warns: ~16k client plus ~16k upstream connections.
inline constexpr uint64_t kWantedOpenFiles = 32768;

// Raises the soft limit to the hard limit (an unlimited hard limit: to the kernel's nr_open).
FileLimit raiseFileLimit();

}  // namespace switchyard
