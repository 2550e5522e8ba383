#include "gateway/client_request.h"

#include <boost/beast/http/error.hpp>

namespace switchyard::gateway {

ClientRequest::Field ClientRequest::fieldAt(size_t i) const {
  const RequestFieldStore::Entry& e = fields_.entries[i];
  return {e.name, textAt(e.name_at, e.name_size), textAt(e.value_at, e.value_size)};
}

std::string_view ClientRequest::operator[](field name) const {
  for (const RequestFieldStore::Entry& e : fields_.entries) {
    if (e.name == name) return textAt(e.value_at, e.value_size);
  }
  return {};
}

std::string_view ClientRequest::operator[](std::string_view name) const {
  for (const RequestFieldStore::Entry& e : fields_.entries) {
    if (boost::beast::iequals(textAt(e.name_at, e.name_size), name)) {
      return textAt(e.value_at, e.value_size);
    }
  }
  return {};
}

void ClientRequest::on_request_impl(verb method, boost::beast::string_view,
                                    boost::beast::string_view target, int version,
                                    error_code& ec) {
  method_ = method;
  target_.assign(target.data(), target.size());
  version_ = version;
  ec = {};
}

void ClientRequest::on_response_impl(int, boost::beast::string_view, int, error_code& ec) {
  ec = boost::beast::http::error::bad_version;  // a request parser sees no status line
}

void ClientRequest::on_field_impl(field name, boost::beast::string_view name_string,
                                  boost::beast::string_view value, error_code& ec) {
  // The header limit (basic_parser's) bounds the text far below 4 GiB.
  RequestFieldStore::Entry& e = fields_.entries.emplace_back();
  e.name = name;
  e.name_at = static_cast<uint32_t>(fields_.text.size());
  e.name_size = static_cast<uint32_t>(name_string.size());
  fields_.text.append(name_string.data(), name_string.size());
  e.value_at = static_cast<uint32_t>(fields_.text.size());
  e.value_size = static_cast<uint32_t>(value.size());
  fields_.text.append(value.data(), value.size());
  ec = {};
}

void ClientRequest::on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                      error_code& ec) {
  // As Beast's string_body: a declared length is reserved at once (the caller may have
  // reserved more, for the JSON parser's padding).
  if (content_length && *content_length > body_.max_size()) {
    ec = boost::beast::http::error::buffer_overflow;
    return;
  }
  if (content_length) body_.reserve(static_cast<size_t>(*content_length));
  ec = {};
}

size_t ClientRequest::on_body_impl(boost::beast::string_view body, error_code& ec) {
  body_.append(body.data(), body.size());
  ec = {};
  return body.size();
}

}  // namespace switchyard::gateway
