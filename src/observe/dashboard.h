// The live dashboard served at /dashboard on the admin listener: one self-contained HTML page
// (inline CSS, JS and SVG; no external assets) that polls /debug/fleet and /debug/decisions.
#pragma once

#include <string_view>

namespace switchyard::observe {

// The page. After its first successful poll of both endpoints the page sets
// <body data-ready="1" data-polls="N" data-replicas="R" data-decisions="D">, which tests use.
std::string_view dashboardHtml();

}  // namespace switchyard::observe
