#include "engine/metrics_filter.h"

#include <algorithm>

#include "core/url_text.h"

namespace switchyard::engine {
namespace {

// The family a "# HELP NAME …" or "# TYPE NAME …" line introduces; empty for other lines.
std::string_view familyOfComment(std::string_view line) {
  if (!line.starts_with("# HELP ") && !line.starts_with("# TYPE ")) return {};
  const std::string_view rest = line.substr(7);
  return rest.substr(0, rest.find(' '));
}

std::string_view sampleName(std::string_view line) {
  return line.substr(0, std::min(line.find('{'), line.find(' ')));
}

}  // namespace

std::vector<std::string> requestedSampleNames(std::string_view query) {
  std::vector<std::string> names;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    if (urlDecode(pair.substr(0, eq), /*plus_is_space=*/true) != "name[]") continue;
    std::string name = urlDecode(pair.substr(eq + 1), /*plus_is_space=*/true);
    if (!name.empty()) names.push_back(std::move(name));
  }
  return names;
}

std::string filterMetricsPage(std::string_view page, std::span<const std::string> names) {
  auto wanted = [&](std::string_view sample) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& name) { return name == sample; });
  };
  std::string out;
  // A family is its comment lines and the samples up to the next family's comments: kept whole
  // when any of its samples is asked for.
  std::string_view family, block;
  bool keep = false;
  auto flush = [&] {
    if (keep) out.append(block);
    block = {};
    keep = false;
  };
  size_t at = 0;
  while (at < page.size()) {
    const size_t end = std::min(page.find('\n', at), page.size());
    const std::string_view line = page.substr(at, end - at);
    const size_t next = std::min(end + 1, page.size());
    const std::string_view family_here = familyOfComment(line);
    if (!family_here.empty() && family_here != family) {
      flush();
      family = family_here;
    }
    if (block.empty()) {
      block = page.substr(at, next - at);
    } else {
      block = std::string_view(block.data(), block.size() + (next - at));
    }
    if (!line.empty() && line.front() != '#' && wanted(sampleName(line))) keep = true;
    at = next;
  }
  flush();
  return out;
}

}  // namespace switchyard::engine
