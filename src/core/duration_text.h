// Duration text in Go's time.ParseDuration form ("300s", "1m30s", "500ms", "0"), for
// environment variables whose AIBrix originals take that form. Config load only.
#pragma once

#include <string_view>

#include "core/clock.h"

namespace switchyard {

// Parses a sequence of <decimal number><unit> with units ns, us, ms, s, m, h (no sign; "0"
// alone is accepted without a unit). False when malformed; `out` is then unchanged.
bool parseDurationText(std::string_view text, TimeNs& out);

}  // namespace switchyard
