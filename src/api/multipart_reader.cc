#include "api/multipart_reader.h"

#include <algorithm>
#include <cstring>

namespace switchyard::api {
namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// RFC 2046 bchars: DIGIT / ALPHA / "'()+_,-./:=?" / space (not last).
bool boundaryChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         std::strchr("'()+_,-./:=? ", c) != nullptr;
}

// Walks `; key=value` parameters (values a token or a quoted string with backslash escapes).
// Calls `visit(key, raw_value, quoted)` for each; returns false on a malformed list.
template <typename Visit>
bool forEachParameter(std::string_view params, Visit&& visit) {
  size_t i = 0;
  while (i < params.size()) {
    while (i < params.size() && (space(params[i]) || params[i] == ';')) ++i;
    if (i >= params.size()) break;
    const size_t key_start = i;
    while (i < params.size() && params[i] != '=' && params[i] != ';') ++i;
    const std::string_view key = trim(params.substr(key_start, i - key_start));
    if (i >= params.size() || params[i] == ';') {
      visit(key, std::string_view(), false);  // a parameter without a value
      continue;
    }
    ++i;  // '='
    while (i < params.size() && space(params[i])) ++i;
    if (i < params.size() && params[i] == '"') {
      const size_t value_start = ++i;
      while (i < params.size() && params[i] != '"') i += params[i] == '\\' ? 2 : 1;
      if (i >= params.size()) return false;  // unterminated quoted string
      visit(key, params.substr(value_start, i - value_start), true);
      ++i;
    } else {
      const size_t value_start = i;
      while (i < params.size() && params[i] != ';') ++i;
      visit(key, trim(params.substr(value_start, i - value_start)), false);
    }
  }
  return true;
}

}  // namespace

std::string_view multipartErrorMessage(MultipartError error) {
  switch (error) {
    case MultipartError::kNone:
      return "";
    case MultipartError::kNotMultipart:
      return "this endpoint takes a multipart/form-data body (Content-Type: multipart/form-data; "
             "boundary=...)";
    case MultipartError::kBadBoundary:
      return "multipart/form-data needs a boundary parameter of 1 to 70 allowed characters";
    case MultipartError::kUnclosed:
      return "malformed multipart body: the closing boundary was never found";
    case MultipartError::kMalformedPart:
      return "malformed multipart body: a part's headers are malformed or too long";
    case MultipartError::kFieldTooLong:
      return "the model field is too long";
  }
  return "";
}

MultipartError MultipartReader::start(std::string_view content_type) {
  *this = MultipartReader();  // no allocation: every member is inline
  const size_t semicolon = content_type.find(';');
  const std::string_view media = trim(content_type.substr(0, semicolon));
  if (!iequals(media, "multipart/form-data")) return error_ = MultipartError::kNotMultipart;
  std::string_view boundary;
  bool escaped = false;
  const bool well_formed =
      semicolon != std::string_view::npos &&
      forEachParameter(content_type.substr(semicolon + 1),
                       [&](std::string_view key, std::string_view value, bool quoted) {
                         if (!iequals(key, "boundary") || !boundary.empty()) {
                           return;
                         }
                         boundary = value;
                         escaped = quoted && value.find('\\') != std::string_view::npos;
                       });
  error_ = MultipartError::kBadBoundary;
  if (!well_formed || escaped || boundary.empty() || boundary.size() > kMaxBoundary ||
      boundary.back() == ' ' || !std::all_of(boundary.begin(), boundary.end(), boundaryChar)) {
    return error_;
  }
  std::memcpy(delimiter_.data(), "\r\n--", 4);
  std::memcpy(delimiter_.data() + 4, boundary.data(), boundary.size());
  delimiter_size_ = boundary.size() + 4;
  matched_ = 2;  // as if the body began with CRLF: "--boundary" at the very start matches
  state_ = State::kPreamble;
  error_ = MultipartError::kNone;
  return error_;
}

void MultipartReader::fail(MultipartError error) {
  if (state_ == State::kFailed) return;
  state_ = State::kFailed;
  error_ = error;
}

std::string_view MultipartReader::field(std::string_view name) const {
  for (size_t i = 0; i < field_count_; ++i) {
    const Field& f = fields_[i];
    if (std::string_view(storage_.data() + f.name_at, f.name_size) == name) {
      return {storage_.data() + f.value_at, f.value_size};
    }
  }
  return {};
}

void MultipartReader::contentBytes(const char* data, size_t size) {
  if (state_ != State::kContent || size == 0) return;  // the preamble is ignored
  if (part_is_file_) file_bytes_ += size;
  if (part_is_model_) {
    if (model_size_ + size > kMaxFieldValue) {
      model_size_ = 0;  // no partial value, however the body was split
      return fail(MultipartError::kFieldTooLong);
    }
    std::memcpy(model_.data() + model_size_, data, size);
    model_size_ += size;
  }
  if (part_keep_ && !part_value_overflow_) {
    if (part_value_size_ + size > kMaxFieldValue ||
        part_value_start_ + part_value_size_ + size > kFieldStorage) {
      part_value_overflow_ = true;  // too long to keep: the field is not remembered
      return;
    }
    std::memcpy(storage_.data() + part_value_start_ + part_value_size_, data, size);
    part_value_size_ += size;
  }
}

void MultipartReader::endPart() {
  if (part_is_model_) model_seen_ = true;
  if (part_keep_ && !part_value_overflow_) {
    Field& f = fields_[field_count_++];
    f.value_at = static_cast<uint16_t>(part_value_start_);
    f.value_size = static_cast<uint16_t>(part_value_size_);
    storage_used_ = part_value_start_ + part_value_size_;
  }
}

// One header line of the current part, in line_. Only Content-Disposition matters.
void MultipartReader::headerLine() {
  const std::string_view line(line_.data(), line_size_);
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return fail(MultipartError::kMalformedPart);
  if (!iequals(trim(line.substr(0, colon)), "content-disposition")) return;
  const std::string_view value = line.substr(colon + 1);
  const size_t semicolon = value.find(';');
  if (!iequals(trim(value.substr(0, semicolon)), "form-data")) return;  // not a form field
  if (semicolon == std::string_view::npos) return;
  std::string_view name;
  bool named = false;
  const bool ok = forEachParameter(
      value.substr(semicolon + 1), [&](std::string_view key, std::string_view v, bool) {
        if (iequals(key, "name") && !named) {
          name = v;
          named = true;
        } else if (iequals(key, "filename") || iequals(key, "filename*")) {
          part_is_file_ = true;
        }
      });
  if (!ok) return fail(MultipartError::kMalformedPart);
  // A part with a filename is an upload, whichever of its header lines says so: its bytes are
  // counted, never kept, even when an earlier line named it `model` or a text field.
  if (part_is_file_) part_is_model_ = part_keep_ = false;
  if (!named || part_is_file_) return;
  part_is_model_ = false;
  part_keep_ = false;
  if (name == "model") {
    part_is_model_ = !model_seen_;  // the first model field counts
    return;
  }
  // A short text field: its name goes to storage now, its value follows it.
  if (field_count_ >= kMaxFields || field(name).data() != nullptr ||
      storage_used_ + name.size() + kMaxFieldValue > kFieldStorage) {
    return;
  }
  // An empty name may have no data pointer, which memcpy must not be given.
  if (!name.empty()) std::memcpy(storage_.data() + storage_used_, name.data(), name.size());
  Field& f = fields_[field_count_];
  f.name_at = static_cast<uint16_t>(storage_used_);
  f.name_size = static_cast<uint16_t>(name.size());
  part_value_start_ = storage_used_ + name.size();
  part_value_size_ = 0;
  part_value_overflow_ = false;
  part_keep_ = true;
}

void MultipartReader::feed(std::string_view bytes) {
  const char* data = bytes.data();
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    switch (state_) {
      case State::kFailed:
      case State::kEpilogue:
        return;
      case State::kPreamble:
      case State::kContent: {
        if (matched_ == 0) {
          // Fast path: content up to the next CR cannot hold a delimiter.
          const void* cr = std::memchr(data + i, '\r', n - i);
          const size_t stop = cr ? static_cast<size_t>(static_cast<const char*>(cr) - data) : n;
          contentBytes(data + i, stop - i);
          i = stop;
          if (i < n) {
            matched_ = 1;
            ++i;
          }
          continue;
        }
        if (data[i] == delimiter_[matched_]) {
          ++i;
          if (++matched_ == delimiter_size_) {
            matched_ = 0;
            if (state_ == State::kContent) endPart();
            if (state_ != State::kFailed) state_ = State::kAfterBoundary;
          }
          continue;
        }
        // Not a delimiter after all: what matched was content. A CR appears only first in the
        // delimiter (boundaries cannot hold one), so a new match can only begin at this byte.
        contentBytes(delimiter_.data(), matched_);
        matched_ = 0;
        continue;
      }
      case State::kAfterBoundary: {
        const char c = data[i++];
        if (c == '-') {
          state_ = State::kAfterBoundaryDash;
        } else if (c == '\r') {
          state_ = State::kAfterBoundaryCr;
        } else if (!space(c)) {
          fail(MultipartError::kMalformedPart);
        }
        continue;
      }
      case State::kAfterBoundaryDash:
        if (data[i++] == '-') {
          state_ = State::kEpilogue;
        } else {
          fail(MultipartError::kMalformedPart);
        }
        continue;
      case State::kAfterBoundaryCr:
        if (data[i++] != '\n') {
          fail(MultipartError::kMalformedPart);
          continue;
        }
        ++parts_;
        part_is_file_ = part_keep_ = part_is_model_ = part_value_overflow_ = false;
        part_value_size_ = 0;
        line_size_ = 0;
        state_ = State::kHeaders;
        continue;
      case State::kHeaders: {
        const char c = data[i++];
        if (c == '\r') {
          state_ = State::kHeaderCr;
        } else if (line_size_ < kMaxHeaderLine) {
          line_[line_size_++] = c;
        } else {
          fail(MultipartError::kMalformedPart);
        }
        continue;
      }
      case State::kHeaderCr:
        if (data[i++] != '\n') {
          fail(MultipartError::kMalformedPart);
          continue;
        }
        if (line_size_ == 0) {
          if (part_is_file_) ++file_parts_;
          state_ = State::kContent;
          continue;
        }
        state_ = State::kHeaders;
        headerLine();
        line_size_ = 0;
        continue;
    }
  }
}

MultipartError MultipartReader::finish() {
  if (state_ == State::kFailed) return error_;
  if (state_ != State::kEpilogue) fail(MultipartError::kUnclosed);
  return error_;
}

}  // namespace switchyard::api
