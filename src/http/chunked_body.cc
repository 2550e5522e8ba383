#include "http/chunked_body.h"

#include <algorithm>
#include <array>
#include <boost/beast/http/error.hpp>
#include <limits>

namespace switchyard::http {
namespace {

// Each byte's value as a hexadecimal digit, or -1.
constexpr std::array<int8_t, 256> kHexValues = [] {
  std::array<int8_t, 256> values{};
  values.fill(-1);
  for (int c = '0'; c <= '9'; ++c) values[c] = static_cast<int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) values[c] = static_cast<int8_t>(c - 'a' + 10);
  for (int c = 'A'; c <= 'F'; ++c) values[c] = static_cast<int8_t>(c - 'A' + 10);
  return values;
}();

int hexValue(char c) { return kHexValues[static_cast<unsigned char>(c)]; }

// RFC 9110's tchar: what a field's name is made of.
bool isTokenChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if ((u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

ChunkedBody::Step ChunkedBody::fail(Error error) {
  refuse(error);
  return Step::kFailed;
}

bool ChunkedBody::refuse(Error error) {
  state_ = State::kFailed;
  error_ = error;
  return false;
}

ChunkedBody::Step ChunkedBody::next(const char*& p, const char* end, std::string_view& piece) {
  piece = {};
  while (p < end) {
    switch (state_) {
      case State::kData: {
        const auto n = static_cast<size_t>(
            std::min<uint64_t>(remaining_, static_cast<uint64_t>(end - p)));
        piece = std::string_view(p, n);
        p += n;
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::kDataCr;
        return p < end ? Step::kPiece : Step::kNeedMore;
      }
      case State::kDataCr:
        if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') {  // the usual end, whole
          p += 2;
          state_ = State::kSizeStart;
          line_bytes_ = 0;
          break;
        }
        if (*p++ != '\r') return fail(Error::kBadLineEnd);
        state_ = State::kDataLf;
        break;
      case State::kDataLf:
        if (*p++ != '\n') return fail(Error::kBadLineEnd);
        state_ = State::kSizeStart;
        line_bytes_ = 0;
        break;
      case State::kSizeStart:
        if (readPlainSizeLine(p, end)) {
          if (state_ == State::kFailed) return Step::kFailed;
          break;
        }
        if (!sizeLineByte(*p++)) return Step::kFailed;
        break;
      case State::kSize:
      case State::kExtension:
      case State::kSizeLf:
        if (!sizeLineByte(*p++)) return Step::kFailed;
        break;
      case State::kDone:
        return Step::kDone;
      case State::kFailed:
        return Step::kFailed;
      default:  // the trailer section
        if (!trailerByte(*p++)) return Step::kFailed;
        if (state_ == State::kDone) return Step::kDone;
        break;
    }
  }
  if (state_ == State::kDone) return Step::kDone;
  return state_ == State::kFailed ? Step::kFailed : Step::kNeedMore;
}

// The usual size line, whole in the input: digits and CRLF, no extension. Read at once (`p`
// moved past it) when it is; otherwise false, and the line is read byte by byte, which would
// come to the same.
bool ChunkedBody::readPlainSizeLine(const char*& p, const char* end) {
  constexpr ptrdiff_t kMostDigits = 15;  // 15 hexadecimal digits cannot overflow
  const char* q = p;
  uint64_t size = 0;
  for (int digit; q < end && q - p < kMostDigits && (digit = hexValue(*q)) >= 0; ++q) {
    size = size * 16 + static_cast<uint64_t>(digit);
  }
  if (q == p || end - q < 2 || q[0] != '\r' || q[1] != '\n') return false;
  p = q + 2;
  endSizeLine(size);
  return true;
}

bool ChunkedBody::endSizeLine(uint64_t size) {
  if (size == 0) {
    state_ = State::kTrailerStart;  // the last chunk
    line_bytes_ = 0;
    return true;
  }
  if (size > body_limit_ - body_bytes_) return refuse(Error::kChunkTooLarge);
  body_bytes_ += size;
  remaining_ = size;
  size_ = 0;
  state_ = State::kData;
  return true;
}

bool ChunkedBody::sizeLineByte(char c) {
  if (++line_bytes_ > kMaxSizeLine) return refuse(Error::kBadChunkExtension);
  switch (state_) {
    case State::kSizeStart: {
      const int digit = hexValue(c);
      if (digit < 0) return refuse(Error::kBadChunkSize);
      size_ = static_cast<uint64_t>(digit);
      state_ = State::kSize;
      return true;
    }
    case State::kSize: {
      const int digit = hexValue(c);
      if (digit >= 0) {
        if (size_ > (body_limit_ >> 4)) return refuse(Error::kChunkTooLarge);
        size_ = size_ * 16 + static_cast<uint64_t>(digit);
        return true;
      }
      if (c == '\r') {
        state_ = State::kSizeLf;
      } else if (c == ';' || c == ' ' || c == '\t') {
        state_ = State::kExtension;
      } else {
        return refuse(Error::kBadChunkSize);
      }
      return true;
    }
    case State::kExtension:
      if (c == '\r') state_ = State::kSizeLf;  // an extension is passed over, as Beast does
      return true;
    default:  // kSizeLf
      if (c != '\n') return refuse(Error::kBadLineEnd);
      return endSizeLine(size_);
  }
}

bool ChunkedBody::trailerByte(char c) {
  if (++line_bytes_ > kMaxTrailer) return refuse(Error::kTrailerTooLong);
  switch (state_) {
    case State::kTrailerStart:
      if (c == '\r') {
        state_ = State::kFinalLf;
        return true;
      }
      if ((c == ' ' || c == '\t') && line_bytes_ > 1) {
        state_ = State::kTrailerValue;  // an obsolete folded line: more of the field's value
        return true;
      }
      if (!isTokenChar(c)) return refuse(Error::kBadTrailer);
      state_ = State::kTrailerName;
      return true;
    case State::kTrailerName:
      if (c == ':') {
        state_ = State::kTrailerValue;
      } else if (!isTokenChar(c)) {
        return refuse(Error::kBadTrailer);
      }
      return true;
    case State::kTrailerValue:
      if (c == '\r') state_ = State::kTrailerLf;  // what a value holds is not looked at
      return true;
    case State::kTrailerLf:
      if (c != '\n') return refuse(Error::kBadLineEnd);
      state_ = State::kTrailerStart;
      return true;
    default:  // kFinalLf
      if (c != '\n') return refuse(Error::kBadLineEnd);
      state_ = State::kDone;
      return true;
  }
}

boost::system::error_code ChunkedBody::errorCode() const {
  namespace bh = boost::beast::http;
  switch (error_) {
    case Error::kNone:
      return {};
    case Error::kBadChunkSize:
      return bh::error::bad_chunk;
    case Error::kChunkTooLarge:
      return bh::error::body_limit;
    case Error::kBadChunkExtension:
      return bh::error::bad_chunk_extension;
    case Error::kBadLineEnd:
      return bh::error::bad_line_ending;
    case Error::kBadTrailer:
      return bh::error::bad_field;
    case Error::kTrailerTooLong:
      return bh::error::header_limit;
  }
  return bh::error::bad_chunk;
}

}  // namespace switchyard::http
