// Writing the Prometheus text exposition format (0.0.4): family headers and samples with escaped
// label values. Shared by the metrics registry and the gateway's shared-state families.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace switchyard::observe {

struct Label {
  std::string_view name;
  std::string_view value;
};

// Backslash, quote and newline escaped as the format requires.
void appendLabelValue(std::string& out, std::string_view value);

// `name{labels} value\n`; NaN and infinities in the format's spelling. `extra_label` (e.g. "le")
// is appended unescaped after `labels`.
void appendSample(std::string& out, std::string_view name, std::initializer_list<Label> labels,
                  double value, std::string_view extra_label = {},
                  std::string_view extra_value = {});

// `# HELP` and `# TYPE` lines of a family.
void appendHeader(std::string& out, std::string_view name, std::string_view type,
                  std::string_view help);

}  // namespace switchyard::observe
