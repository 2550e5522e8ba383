#include "gateway/async_jobs.h"

#include <array>

namespace switchyard::gateway {
namespace {

constexpr std::array<std::string_view, 4> kCollections = {"responses", "batches", "files",
                                                          "videos"};
constexpr size_t kMaxIdBytes = 200;

bool idChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-' || c == '.' || c == ':';
}

bool space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

JobPath classifyJobPath(std::string_view path, bool is_post) {
  static constexpr std::string_view kPrefix = "/v1/";
  if (!path.starts_with(kPrefix)) return {};
  std::string_view rest = path.substr(kPrefix.size());
  for (std::string_view collection : kCollections) {
    if (!rest.starts_with(collection)) continue;
    std::string_view tail = rest.substr(collection.size());
    if (tail.empty() || tail == "/") {
      return {is_post ? JobRequest::kCreate : JobRequest::kList, collection, {}};
    }
    if (tail[0] != '/') return {};
    tail.remove_prefix(1);
    const std::string_view id = tail.substr(0, tail.find('/'));
    if (id.empty() || id.size() > kMaxIdBytes) return {};
    for (char c : id) {
      if (!idChar(c)) return {};
    }
    return {JobRequest::kFollowUp, collection, id};
  }
  return {};
}

std::string_view findResourceId(std::string_view prefix) {
  static constexpr std::string_view kKey = "\"id\"";
  size_t at = 0;
  while ((at = prefix.find(kKey, at)) != std::string_view::npos) {
    size_t i = at + kKey.size();
    at = i;
    while (i < prefix.size() && space(prefix[i])) ++i;
    if (i >= prefix.size() || prefix[i] != ':') continue;
    ++i;
    while (i < prefix.size() && space(prefix[i])) ++i;
    if (i >= prefix.size() || prefix[i] != '"') continue;
    const size_t start = ++i;
    while (i < prefix.size() && idChar(prefix[i]) && i - start <= kMaxIdBytes) ++i;
    if (i >= prefix.size() || prefix[i] != '"' || i == start || i - start > kMaxIdBytes) {
      return {};
    }
    return prefix.substr(start, i - start);
  }
  return {};
}

}  // namespace switchyard::gateway
