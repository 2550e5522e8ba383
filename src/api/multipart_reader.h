// MultipartReader: a streaming multipart/form-data reader (RFC 7578 over RFC 2046) that finds the
// few form fields the gateway and the emulator need — above all `model` — in a body that is
// forwarded as it is. It never buffers a part's content: file parts are only counted (bytes),
// text fields are kept only when short (kMaxFieldValue), in fixed inline storage.
//
// Use: start(content_type) with the request's Content-Type header value, then feed() the body in
// as many pieces as it arrives in (every split gives the same result), then finish(). Fields are
// available as soon as their part closes; the result of finish() says whether the body was
// well formed. After an error, feed() ignores its input and finish() returns that error.
//
// Cost: O(body bytes) with a memchr fast path inside part contents; no allocation at all (the
// object is ~3 KiB). Not thread-safe; one per worker, reused by calling start() again. Never
// throws. Views returned point into the reader and are valid until the next start().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace switchyard::api {

enum class MultipartError : uint8_t {
  kNone,
  kNotMultipart,   // Content-Type missing or not multipart/form-data (the endpoint answers 415)
  kBadBoundary,    // no boundary parameter, or one RFC 2046 does not allow (400)
  kUnclosed,       // the body ended before the closing boundary (or never had one) (400)
  kMalformedPart,  // a part's header block is malformed or too long (400)
  kFieldTooLong,   // the `model` field is longer than kMaxFieldValue (400)
};

// The error's client-facing text, for an OpenAI error envelope.
std::string_view multipartErrorMessage(MultipartError error);

class MultipartReader {
 public:
  static constexpr size_t kMaxBoundary = 70;      // RFC 2046
  static constexpr size_t kMaxHeaderLine = 1024;  // one part header line
  static constexpr size_t kMaxFieldValue = 256;   // a kept text field's value
  static constexpr size_t kMaxFields = 8;         // kept text fields (the first ones)
  static constexpr size_t kFieldStorage = 2048;   // their names and values together

  // Resets the reader and reads the boundary from a Content-Type header value. Returns
  // kNotMultipart or kBadBoundary (and ignores later input) when the header does not fit.
  MultipartError start(std::string_view content_type);
  void feed(std::string_view bytes);
  // The body is complete: kNone if the closing boundary was seen and every part was well formed.
  MultipartError finish();

  // The first `model` field's value (empty when absent so far).
  std::string_view model() const { return {model_.data(), model_size_}; }
  bool hasModel() const { return model_seen_; }
  // The value of a short text field (first occurrence), empty if absent or too long to keep.
  std::string_view field(std::string_view name) const;
  // Bytes of content in parts that carry a filename (the uploaded files), and how many such parts.
  uint64_t fileBytes() const { return file_bytes_; }
  int fileParts() const { return file_parts_; }
  int parts() const { return parts_; }
  bool closed() const { return state_ == State::kEpilogue; }

 private:
  enum class State : uint8_t {
    kFailed,
    kPreamble,        // before the first boundary
    kAfterBoundary,   // "--" (close) or padding then CRLF
    kAfterBoundaryDash,
    kAfterBoundaryCr,
    kHeaders,         // a part's header lines
    kHeaderCr,
    kContent,         // a part's content, up to the next delimiter
    kEpilogue,        // after the closing boundary
  };
  void fail(MultipartError error);
  void contentBytes(const char* data, size_t size);  // bytes of the current part
  void endPart();
  void headerLine();
  void delimiterByte(char c);  // the delimiter matcher, shared by preamble and content

  State state_ = State::kFailed;
  MultipartError error_ = MultipartError::kNotMultipart;
  // "\r\n--" + boundary; the body is read as if preceded by "\r\n" so the first one matches too.
  std::array<char, kMaxBoundary + 4> delimiter_{};
  size_t delimiter_size_ = 0;
  size_t matched_ = 0;  // delimiter bytes matched so far
  std::array<char, kMaxHeaderLine> line_{};
  size_t line_size_ = 0;
  // The current part.
  bool part_is_file_ = false;
  bool part_keep_ = false;  // a text field being kept
  bool part_is_model_ = false;
  size_t part_value_start_ = 0;  // in storage_
  size_t part_value_size_ = 0;
  bool part_value_overflow_ = false;
  // Results.
  std::array<char, kMaxFieldValue> model_{};
  size_t model_size_ = 0;
  bool model_seen_ = false;
  struct Field {
    uint16_t name_at, name_size, value_at, value_size;
  };
  std::array<Field, kMaxFields> fields_{};
  size_t field_count_ = 0;
  std::array<char, kFieldStorage> storage_{};
  size_t storage_used_ = 0;
  uint64_t file_bytes_ = 0;
  int file_parts_ = 0;
  int parts_ = 0;
};

}  // namespace switchyard::api
