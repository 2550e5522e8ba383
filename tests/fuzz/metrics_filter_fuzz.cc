// Fuzz target: the emulator's /metrics `name[]` filter on arbitrary bytes. The first line is the
// query, the rest the page. Checks that the answer is made of the page's own lines.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/metrics_filter.h"

namespace {
void check(bool condition) {
  if (!condition) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::engine;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t newline = text.find('\n');
  const std::string_view query = text.substr(0, newline);
  const std::string_view page =
      newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
  const auto names = requestedSampleNames(query);
  for (const auto& name : names) check(!name.empty() && name.size() <= query.size());
  const std::string filtered = filterMetricsPage(page, names);
  check(filtered.size() <= page.size());
  check(names.empty() ? filtered.empty() : true);
  return 0;
}
