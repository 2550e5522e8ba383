// Percent-encoding for URL paths and query values (RFC 3986), for the few places that build or
// read URLs by hand: the Kubernetes API client, the admin drain endpoints, drain-wait.
#pragma once

#include <string>
#include <string_view>

namespace switchyard {

// Escapes every byte but unreserved characters (A-Z a-z 0-9 - _ . ~) and those in `keep`
// (e.g. "/" for a path).
std::string urlEncode(std::string_view text, std::string_view keep = "/");

// Decodes %XX escapes (and '+' as a space when `plus_is_space`); a malformed escape is kept as
// it is.
std::string urlDecode(std::string_view text, bool plus_is_space = false);

}  // namespace switchyard
