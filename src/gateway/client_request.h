// ClientRequest: a client's HTTP/1.1 request, parsed by Beast's basic_parser into what the request
// path reads. Beast's request type keeps its header fields in a container: per field a node, an
// insert into an ordered tree with case-insensitive compares, and a walk to free them all at the
// end, for a request whose handful of fields is looked up a few times each and copied upstream
// once. Here the fields go into a flat store the connection keeps between requests (their bytes
// in one string, an entry of offsets per field, in arrival order), so a request allocates nothing
// once its connection has served one like it. Lookups are linear over the few fields a request
// carries, in Beast's manner: the first field of that name, case-insensitively, or "".
// The parser and the request are one object: it lives for the request, in the connection's loop.
#pragma once

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::gateway {

// A request's header fields, kept by its connection: clear() keeps the memory for the next one.
struct RequestFieldStore {
  struct Entry {
    boost::beast::http::field name = boost::beast::http::field::unknown;
    uint32_t name_at = 0;
    uint32_t name_size = 0;
    uint32_t value_at = 0;
    uint32_t value_size = 0;
  };
  std::string text;  // every field's name and value bytes, back to back
  std::vector<Entry> entries;
  void clear() {
    text.clear();
    entries.clear();
  }
};

class ClientRequest final : public boost::beast::http::basic_parser<true> {
 public:
  using error_code = boost::beast::error_code;
  using field = boost::beast::http::field;
  using verb = boost::beast::http::verb;

  struct Field {
    field name;                    // field::unknown for a name Beast does not know
    std::string_view name_string;  // as the client spelled it
    std::string_view value;
  };

  // `fields` is cleared and receives the request's header fields; `body` is cleared and
  // receives its body (both are the caller's, reused from request to request).
  ClientRequest(RequestFieldStore& fields, std::string& body) : fields_(fields), body_(body) {
    fields_.clear();
    body_.clear();
  }

  verb method() const { return method_; }
  std::string_view target() const { return target_; }
  int version() const { return version_; }
  std::string& body() { return body_; }
  const std::string& body() const { return body_; }

  size_t fieldCount() const { return fields_.entries.size(); }
  Field fieldAt(size_t i) const;
  // The first field of that name's value, or "" (Beast's basic_fields::operator[]).
  std::string_view operator[](field name) const;
  std::string_view operator[](std::string_view name) const;

 private:
  void on_request_impl(verb method, boost::beast::string_view method_string,
                       boost::beast::string_view target, int version, error_code& ec) override;
  void on_response_impl(int, boost::beast::string_view, int, error_code& ec) override;
  void on_field_impl(field name, boost::beast::string_view name_string,
                     boost::beast::string_view value, error_code& ec) override;
  void on_header_impl(error_code& ec) override { ec = {}; }
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         error_code& ec) override;
  size_t on_body_impl(boost::beast::string_view body, error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t, boost::beast::string_view, error_code& ec) override {
    ec = {};
  }
  size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                            error_code& ec) override {
    return on_body_impl(body, ec);
  }
  void on_finish_impl(error_code& ec) override { ec = {}; }

  std::string_view textAt(uint32_t at, uint32_t size) const {
    return std::string_view(fields_.text).substr(at, size);
  }

  RequestFieldStore& fields_;
  std::string& body_;
  verb method_ = verb::unknown;
  std::string target_;
  int version_ = 11;
};

}  // namespace switchyard::gateway
