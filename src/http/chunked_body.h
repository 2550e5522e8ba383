// ChunkedBody: the body of an HTTP/1.1 message in chunked transfer coding (RFC 9112 §7.1),
// decoded where it lies in the bytes received.
//
// Beast's basic_parser decodes chunks too, but a relayed event stream is mostly chunk framing:
// each event is a chunk of its own, and each parser call for a size line, a chunk's data or its
// end went through the parser's state switch, its virtual callbacks and an error_code apiece,
// about 500 instructions per event. Here a chunk's size line, data and end are read in one pass
// of a small state machine; the data is handed out as pieces pointing into the input.
//
// Accepted: hexadecimal sizes (leading zeros too) up to the body's limit, chunk extensions
// (after `;` or a blank, passed over up to the line's end: Beast does not look into them either),
// and a trailer section of field lines (a name of token characters, ':', a value up to CR;
// folded lines too) after the last chunk, passed over. A line ends with CRLF only. Anything else
// is an error, reported once and kept. What Beast's parser accepts, this accepts with the same
// body (tests/fuzz/chunked_body_fuzz.cc checks it); it is looser only where the relay does not
// look (extensions, trailer values). One decoder per message; not thread-safe.
#pragma once

#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace switchyard::http {

class ChunkedBody {
 public:
  enum class Error : uint8_t {
    kNone,
    kBadChunkSize,       // not a hexadecimal digit where the size is
    kChunkTooLarge,      // the size, or the body so far, passes the limit
    kBadChunkExtension,  // too long a size line (with its extensions)
    kBadLineEnd,         // a line that does not end with CRLF (or a chunk's data without one)
    kBadTrailer,         // a trailer line that is not a field (name ':' value)
    kTrailerTooLong,     // the trailer section passes its limit
  };
  // What next() stopped at.
  enum class Step : uint8_t {
    kPiece,     // `piece` holds body bytes; more may follow in the same input
    kNeedMore,  // the input is used up (a last piece may be in `piece`)
    kDone,      // the body's end: its last chunk and trailer section are read
    kFailed,    // error() says why; nothing more is read
  };

  static constexpr size_t kMaxSizeLine = 4096;   // a size line with its extensions
  static constexpr size_t kMaxTrailer = 16384;   // the whole trailer section

  explicit ChunkedBody(uint64_t body_limit) : body_limit_(body_limit) {}

  // Reads from `p` (moved past what it reads) up to `end`, stopping after the next piece of body
  // data (`piece`, pointing into the input), at the body's end, at an error, or where the input
  // ends. `piece` is empty unless the step found body bytes.
  Step next(const char*& p, const char* end, std::string_view& piece);

  bool done() const { return state_ == State::kDone; }
  Error error() const { return error_; }
  uint64_t bodyBytes() const { return body_bytes_; }
  // The error as Beast's parser names it (bad_chunk, body_limit, ...), for the same messages.
  boost::system::error_code errorCode() const;

 private:
  enum class State : uint8_t {
    kSizeStart,       // a size line's first hexadecimal digit
    kSize,            // more digits, an extension, or CR
    kExtension,       // up to CR
    kSizeLf,          // the size line's LF
    kData,            // `remaining_` bytes of data
    kDataCr,          // the CRLF after a chunk's data
    kDataLf,
    kTrailerStart,    // a trailer line's first byte, or the final CRLF
    kTrailerName,     // a field's name, up to ':'
    kTrailerValue,    // up to CR
    kTrailerLf,       // a trailer line's LF
    kFinalLf,         // the body's last LF
    kDone,
    kFailed,
  };

  Step fail(Error error);
  bool refuse(Error error);  // fail() for the byte readers below: always false
  bool readPlainSizeLine(const char*& p, const char* end);
  bool endSizeLine(uint64_t size);  // the size line's LF read; false on an error
  bool sizeLineByte(char c);  // kSizeStart, kSize, kExtension, kSizeLf; false on an error
  bool trailerByte(char c);   // the trailer states; false on an error

  uint64_t body_limit_;
  uint64_t body_bytes_ = 0;
  uint64_t size_ = 0;       // the size being read
  uint64_t remaining_ = 0;  // data bytes of the current chunk not yet handed out
  size_t line_bytes_ = 0;   // of the size line, or of the trailer section
  State state_ = State::kSizeStart;
  Error error_ = Error::kNone;
};

}  // namespace switchyard::http
