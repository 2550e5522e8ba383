// AnswerParser: a replica's HTTP/1.1 answer, parsed by Beast's basic_parser into what the relay
// needs and nothing more. The end-to-end header fields go straight into a string, as the client
// will get them ("Name: value\r\n", in order; hop-by-hop fields dropped), instead of into a field
// container that the relay would then walk and copy: the container cost a node, a tree insert
// with case-insensitive compares per field, and a walk to free them all. The body goes into the
// buffer the caller names, as Beast's buffer_body does (need_buffer when it is full), or is left
// where it lies in the bytes parsed, its pieces noted (setBodyViews()).
#pragma once

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <algorithm>
#include <array>
#include <boost/asio/buffer.hpp>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace switchyard::gateway {

// Headers of one hop that are never relayed to the next (forwarder.cc).
bool isHopByHop(boost::beast::http::field f);

class AnswerParser final : public boost::beast::http::basic_parser<false> {
 public:
  using error_code = boost::beast::error_code;
  using field = boost::beast::http::field;
  using string_view = boost::beast::string_view;

  // `fields` is cleared and receives the answer's end-to-end header fields.
  explicit AnswerParser(std::string& fields) : fields_(fields) { fields_.clear(); }

  unsigned status() const { return status_; }
  // The first Content-Type field says text/event-stream.
  bool eventStream() const { return event_stream_; }
  // Where the next body bytes go, and how much room is left there.
  void setBody(char* data, size_t size) {
    body_data_ = data;
    body_size_ = size;
    viewing_ = false;
  }
  size_t bodyRoom() const { return body_size_; }
  // The next body bytes are not copied: each piece is noted where it lies in the bytes given to
  // put(), up to kMaxViews pieces (need_buffer then). They stay valid while those bytes stay where
  // they are: for a flat_buffer, until its next prepare() or reserve() (consume() moves nothing).
  // A relayed stream's events then go from the buffer the replica's bytes were read into to the
  // client's socket, where a copy would touch a piece buffer cold since the last event.
  static constexpr size_t kMaxViews = 16;
  void setBodyViews() {
    viewing_ = true;
    view_count_ = 0;
    view_bytes_ = 0;
  }
  std::span<const boost::asio::const_buffer> views() const { return {views_.data(), view_count_}; }
  // Notes a piece of body decoded elsewhere (http::ChunkedBody), as the parser's own are; false
  // when the views are full (the piece is then not noted).
  bool addView(std::string_view piece) {
    if (view_count_ == kMaxViews) return false;
    views_[view_count_++] = boost::asio::const_buffer(piece.data(), piece.size());
    view_bytes_ += piece.size();
    return true;
  }
  size_t viewBytes() const { return view_bytes_; }

 private:
  void on_request_impl(boost::beast::http::verb, string_view, string_view, int,
                       error_code& ec) override {
    ec = boost::beast::http::error::bad_method;  // a response parser sees no request line
  }
  void on_response_impl(int code, string_view, int, error_code& ec) override {
    status_ = static_cast<unsigned>(code);
    ec = {};
  }
  void on_field_impl(field name, string_view name_string, string_view value,
                     error_code& ec) override {
    ec = {};
    if (name == field::content_type && !content_type_seen_) {
      content_type_seen_ = true;
      event_stream_ = boost::beast::iequals(value.substr(0, 17), "text/event-stream");
    }
    if (isHopByHop(name)) return;
    fields_.append(name_string.data(), name_string.size()).append(": ");
    fields_.append(value.data(), value.size()).append("\r\n");
  }
  void on_header_impl(error_code& ec) override { ec = {}; }
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code& ec) override {
    ec = {};
  }
  size_t on_body_impl(string_view body, error_code& ec) override { return copyBody(body, ec); }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code& ec) override { ec = {}; }
  size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override {
    return copyBody(body, ec);
  }
  void on_finish_impl(error_code& ec) override { ec = {}; }

  // Beast's buffer_body: what fits is copied; the rest waits for the next buffer.
  size_t copyBody(string_view body, error_code& ec) {
    if (viewing_) return noteBody(body, ec);
    if (body_data_ == nullptr) {
      ec = boost::beast::http::error::need_buffer;
      return 0;
    }
    const size_t n = std::min(body_size_, body.size());
    if (n > 0) std::memcpy(body_data_, body.data(), n);
    body_data_ += n;
    body_size_ -= n;
    if (n == body.size()) {
      ec = {};
    } else {
      ec = boost::beast::http::error::need_buffer;
    }
    return n;
  }

  size_t noteBody(string_view body, error_code& ec) {
    if (body.empty()) {
      ec = {};
      return 0;
    }
    if (view_count_ == kMaxViews) {
      ec = boost::beast::http::error::need_buffer;
      return 0;
    }
    views_[view_count_++] = boost::asio::const_buffer(body.data(), body.size());
    view_bytes_ += body.size();
    ec = {};
    return body.size();
  }

  std::string& fields_;
  bool viewing_ = false;
  size_t view_count_ = 0;
  size_t view_bytes_ = 0;
  std::array<boost::asio::const_buffer, kMaxViews> views_;
  char* body_data_ = nullptr;
  size_t body_size_ = 0;
  unsigned status_ = 0;
  bool content_type_seen_ = false;
  bool event_stream_ = false;
};

}  // namespace switchyard::gateway
