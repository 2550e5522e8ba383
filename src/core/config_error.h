// ConfigError: a configuration or scenario file that cannot be used, with a message naming the
// offending key. Thrown at start-up and on reload only, never on the request path. `line` is the
// 1-based line in the file when the reader knew it (0 otherwise), so file loaders can prefix
// "FILE:LINE: " without re-parsing the message.
#pragma once

#include <stdexcept>
#include <string>

namespace switchyard {

struct ConfigError : std::runtime_error {
  explicit ConfigError(const std::string& message, int line_in = 0)
      : std::runtime_error(message), line(line_in) {}
  int line = 0;
};

}  // namespace switchyard
