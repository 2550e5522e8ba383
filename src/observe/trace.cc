#include "observe/trace.h"

#include <string>

namespace switchyard::observe {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // the spec allows lowercase only
}

bool parseHex(std::string_view text, uint8_t* out, size_t bytes) {
  if (text.size() != bytes * 2) return false;
  for (size_t i = 0; i < bytes; ++i) {
    const int hi = hexValue(text[2 * i]);
    const int lo = hexValue(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

constexpr char kHex[] = "0123456789abcdef";

}  // namespace

bool TraceId::valid() const {
  for (uint8_t b : bytes) {
    if (b) return true;
  }
  return false;
}

bool parseTraceParent(std::string_view text, TraceParent& out) {
  // version(2) - trace-id(32) - parent-id(16) - flags(2); future versions may append fields.
  if (text.size() < 55 || text[2] != '-' || text[35] != '-' || text[52] != '-') return false;
  uint8_t version = 0;
  if (!parseHex(text.substr(0, 2), &version, 1) || version == 0xff) return false;
  if (version == 0 && text.size() != 55) return false;
  if (text.size() > 55 && text[55] != '-') return false;
  TraceParent parsed;
  if (!parseHex(text.substr(3, 32), parsed.trace_id.bytes.data(), 16)) return false;
  uint8_t span[8];
  if (!parseHex(text.substr(36, 16), span, 8)) return false;
  uint8_t flags = 0;
  if (!parseHex(text.substr(53, 2), &flags, 1)) return false;
  for (uint8_t b : span) parsed.parent_span_id = parsed.parent_span_id << 8 | b;
  if (!parsed.trace_id.valid() || parsed.parent_span_id == 0) return false;
  parsed.sampled = flags & 1;
  out = parsed;
  return true;
}

void formatTraceParent(char (&out)[56], const TraceId& trace, uint64_t span_id, bool sampled) {
  size_t p = 0;
  out[p++] = '0';
  out[p++] = '0';
  out[p++] = '-';
  for (uint8_t b : trace.bytes) {
    out[p++] = kHex[b >> 4];
    out[p++] = kHex[b & 15];
  }
  out[p++] = '-';
  for (int shift = 60; shift >= 0; shift -= 4) out[p++] = kHex[(span_id >> shift) & 15];
  out[p++] = '-';
  out[p++] = '0';
  out[p++] = sampled ? '1' : '0';
  out[p] = '\0';
}

void appendHex(std::string& out, const uint8_t* bytes, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 15]);
  }
}

void appendHex64(std::string& out, uint64_t v) {
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kHex[(v >> shift) & 15]);
}

}  // namespace switchyard::observe
