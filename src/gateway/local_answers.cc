// Answers the gateway gives itself: JSON bodies with their head written from the connection's
// reused buffer, OpenAI error envelopes, refusals with Retry-After, and the model list.
#include <boost/asio/write.hpp>
#include <boost/beast/http/status.hpp>
#include <cstdio>

#include "api/openai_error.h"
#include "gateway/worker_impl.h"

namespace switchyard::gateway {

void appendStatusLine(std::string& out, unsigned status) {
  out.append("HTTP/1.1 ");
  out.append(std::to_string(status));
  out.push_back(' ');
  out.append(http::obsolete_reason(static_cast<http::status>(status)));
  out.append("\r\n");
}

asio::awaitable<bool> Worker::Impl::sendJson(ClientConnection& conn, unsigned status,
                                             std::string_view body, std::string_view request_id,
                                             bool keep_alive, std::string_view retry_after) {
  conn.observed.status = status;  // the status the client gets, for the request's metrics
  std::string& head = conn.head;
  head.clear();
  appendStatusLine(head, status);
  appendHeader(head, "Content-Type", "application/json");
  appendHeader(head, "Content-Length", std::to_string(body.size()));
  if (!request_id.empty()) appendHeader(head, "x-request-id", request_id);
  if (!retry_after.empty()) appendHeader(head, "Retry-After", retry_after);
  AuthStage::appendHeaders(conn.auth, head);  // x-ratelimit-*, WWW-Authenticate
  if (!keep_alive) appendHeader(head, "Connection", "close");
  head.append("\r\n");
  const std::array<asio::const_buffer, 2> buffers = {asio::buffer(head), asio::buffer(body)};
  conn.stream.expires_after(asDuration(config.timeouts.client_write));
  auto [ec, n] = co_await asio::async_write(conn.stream, buffers, kTuple);
  co_return keep_alive && !ec;
}

asio::awaitable<bool> Worker::Impl::sendError(ClientConnection& conn, unsigned status,
                                              std::string_view message, std::string_view type,
                                              std::string_view code, std::string_view param,
                                              std::string_view request_id, bool keep_alive) {
  api::OpenAiError error{message, type, std::nullopt, std::nullopt};
  if (!param.empty()) error.param = param;
  if (!code.empty()) error.code = code;
  conn.aux.clear();
  api::appendErrorBody(conn.aux, error);
  const std::string body = std::move(conn.aux);
  co_return co_await sendJson(conn, status, body, request_id, keep_alive);
}

asio::awaitable<bool> Worker::Impl::sendRefusal(ClientConnection& conn, const Refusal& refusal,
                                                std::string_view request_id, bool keep_alive) {
  api::OpenAiError error{refusal.message, refusal.type, std::nullopt, std::nullopt};
  if (!refusal.param.empty()) error.param = refusal.param;
  if (!refusal.code.empty()) error.code = refusal.code;
  conn.aux.clear();
  api::appendErrorBody(conn.aux, error);
  const std::string body = std::move(conn.aux);
  if (refusal.retry_after < 0) {
    co_return co_await sendJson(conn, refusal.status, body, request_id, keep_alive);
  }
  // Whole seconds, rounded up, at least 1 (RFC 9110 delay-seconds).
  const TimeNs seconds = std::max<TimeNs>(1, (refusal.retry_after + kNsPerSec - 1) / kNsPerSec);
  char retry_header[32];
  const int len = std::snprintf(retry_header, sizeof retry_header, "%lld",
                                static_cast<long long>(seconds));
  co_return co_await sendJson(conn, refusal.status, body, request_id, keep_alive,
                              std::string_view(retry_header, static_cast<size_t>(len)));
}

asio::awaitable<bool> Worker::Impl::listModels(ClientConnection& conn, bool keep_alive) {
  const auto snapshot = snapshots.get();
  conn.aux.assign(R"({"object":"list","data":[)");
  bool first = true;
  for (size_t i = 0; snapshot && i < snapshot->models.size(); ++i) {
    // With API keys, the models the request's key may use.
    if (conn.auth.keyed() && !conn.auth.key->mayUse(snapshot->models[i].name)) continue;
    if (!first) conn.aux.push_back(',');
    first = false;
    conn.aux.append(R"({"id":")");
    api::appendJsonEscaped(conn.aux, snapshot->models[i].name);
    conn.aux.append(R"(","object":"model","created":0,"owned_by":"switchyard"})");
  }
  conn.aux.append("]}");
  const std::string body = std::move(conn.aux);
  co_return co_await sendJson(conn, 200, body, "", keep_alive);
}

}  // namespace switchyard::gateway
