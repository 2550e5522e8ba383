#include "gateway/optimizer_panel.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <chrono>

#include "core/json_util.h"
#include "fleet/fleet_registry.h"

namespace switchyard::gateway {

namespace {
constexpr TimeNs kInterval = 2 * kNsPerSec;
constexpr uint64_t kBodyLimit = 4 << 20;  // a few thousand deployments' answers

int64_t unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

OptimizerPanel::OptimizerPanel(boost::asio::io_context& io, std::string url)
    : url_(std::move(url)),
      alive_(std::make_shared<bool>(true)),
      cycle_(io, "optimizer panel", kInterval, [this] { return fetch(); }) {
  if (url_.empty()) return;
  std::string host, address;
  uint16_t port = 0;
  fleet::splitHttpUrl(url_, host, port, &address);  // checked at config load
  client_ = std::make_unique<http::ControlHttpClient>(io, host, port, address);
}

OptimizerPanel::~OptimizerPanel() { stop(); }

void OptimizerPanel::start() {
  if (client_) cycle_.start();
}

void OptimizerPanel::stop() {
  *alive_ = false;
  cycle_.stop();
}

boost::asio::awaitable<void> OptimizerPanel::fetch() {
  const auto alive = alive_;
  const http::GetResult result =
      co_await client_->get("/debug/optimizer", std::chrono::seconds(1), kBodyLimit);
  if (!*alive) co_return;
  std::string error;
  if (result.status == 0) {
    error = "no answer from " + url_;
  } else if (result.status != 200) {
    error = fmt::format("{} answered {}", url_, result.status);
  } else {
    // Embedded as is in this gateway's JSON: it must be JSON.
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(result.body).get(root) != simdjson::SUCCESS || !root.is_object()) {
      error = url_ + "/debug/optimizer is not a JSON object";
    }
  }
  std::lock_guard lock(mutex_);
  error_ = std::move(error);
  if (error_.empty()) {
    last_ = result.body;
    while (!last_.empty() && (last_.back() == '\n' || last_.back() == '\r')) last_.pop_back();
    fetched_unix_ms_ = unixMs();
  }
}

std::string OptimizerPanel::json() const {
  std::string out = "{\"optimizer_url\":";
  if (url_.empty()) {
    out += "null";
  } else {
    json::appendString(out, url_);
  }
  std::lock_guard lock(mutex_);
  out += fmt::format(",\"fetched_unix_ms\":{},\"error\":", fetched_unix_ms_);
  if (error_.empty()) {
    out += "null";
  } else {
    json::appendString(out, error_);
  }
  out += ",\"optimizer\":";
  out += last_.empty() ? "null" : last_;
  out += "}\n";
  return out;
}

}  // namespace switchyard::gateway
