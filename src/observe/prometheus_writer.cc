#include "observe/prometheus_writer.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>

namespace switchyard::observe {
namespace {
using Out = std::back_insert_iterator<std::string>;
}  // namespace

// Label values are escaped as the exposition format requires (backslash, quote, newline).
void appendLabelValue(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\\') {
      out.append("\\\\");
    } else if (c == '"') {
      out.append("\\\"");
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
}

void appendSample(std::string& out, std::string_view name, std::initializer_list<Label> labels,
                  double value, std::string_view extra_label, std::string_view extra_value) {
  out.append(name);
  if (labels.size() > 0 || !extra_label.empty()) {
    out.push_back('{');
    bool first = true;
    for (const Label& l : labels) {
      if (!first) out.push_back(',');
      first = false;
      out.append(l.name).append("=\"");
      appendLabelValue(out, l.value);
      out.push_back('"');
    }
    if (!extra_label.empty()) {
      if (!first) out.push_back(',');
      out.append(extra_label).append("=\"").append(extra_value).push_back('"');
    }
    out.push_back('}');
  }
  out.push_back(' ');
  if (std::isnan(value)) {
    out.append("NaN");
  } else if (std::isinf(value)) {
    out.append(value > 0 ? "+Inf" : "-Inf");
  } else {
    fmt::format_to(Out(out), "{}", value);
  }
  out.push_back('\n');
}

void appendHeader(std::string& out, std::string_view name, std::string_view type,
                  std::string_view help) {
  fmt::format_to(Out(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace switchyard::observe
