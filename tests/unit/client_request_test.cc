// ClientRequest (gateway/client_request.h): a client's request parsed into a flat field store its
// connection reuses, looked up as Beast's field container would answer.
#include "gateway/client_request.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <string>
#include <string_view>

namespace switchyard::gateway {
namespace {

namespace http = boost::beast::http;

// Feeds `bytes` to the request `step` bytes at a time, as reads would bring them; returns the
// error that stopped it (need_more when the bytes ran out first).
boost::beast::error_code parse(ClientRequest& request, std::string_view bytes, size_t step) {
  std::string pending;
  size_t at = 0;
  for (;;) {
    if (at < bytes.size()) {
      const size_t n = std::min(step, bytes.size() - at);
      pending.append(bytes.substr(at, n));
      at += n;
    }
    boost::beast::error_code ec;
    const size_t used = request.put(boost::asio::buffer(pending), ec);
    pending.erase(0, used);
    if (request.is_done()) return {};
    if (ec == http::error::need_more && at < bytes.size()) continue;
    if (ec) return ec;
    if (used == 0 && at >= bytes.size()) return http::error::need_more;
  }
}

TEST(ClientRequestTest, FieldsAreLookedUpAsBeastWouldAndKeptInArrivalOrder) {
  RequestFieldStore fields;
  std::string body;
  const std::string_view bytes =
      "POST /v1/chat/completions?x=1 HTTP/1.1\r\n"
      "Host: gw\r\n"
      "X-Session-Id: first\r\n"
      "authorization: Bearer sk-1\r\n"
      "x-session-id: second\r\n"
      "Content-Type: application/json\r\n"
      "Content-Length: 7\r\n"
      "\r\n"
      "{\"a\":1}";
  for (size_t step : {size_t{1}, size_t{5}, bytes.size()}) {
    ClientRequest request(fields, body);
    ASSERT_FALSE(parse(request, bytes, step)) << "step " << step;
    ASSERT_TRUE(request.is_done());
    EXPECT_EQ(request.method(), http::verb::post);
    EXPECT_EQ(request.target(), "/v1/chat/completions?x=1");
    EXPECT_EQ(request.version(), 11);
    EXPECT_TRUE(request.keep_alive());
    EXPECT_EQ(request.body(), "{\"a\":1}");
    // The first of a name, whatever its case; "" when absent.
    EXPECT_EQ(request["x-session-id"], "first");
    EXPECT_EQ(request["X-SESSION-ID"], "first");
    EXPECT_EQ(request[http::field::authorization], "Bearer sk-1");
    EXPECT_EQ(request["Authorization"], "Bearer sk-1");
    EXPECT_EQ(request["x-request-id"], "");
    EXPECT_EQ(request[http::field::expect], "");
    ASSERT_EQ(request.fieldCount(), 6u);
    EXPECT_EQ(request.fieldAt(0).name, http::field::host);
    EXPECT_EQ(request.fieldAt(1).name_string, "X-Session-Id");
    EXPECT_EQ(request.fieldAt(1).name, http::field::unknown);
    EXPECT_EQ(request.fieldAt(3).name_string, "x-session-id");
    EXPECT_EQ(request.fieldAt(3).value, "second");
    EXPECT_EQ(request.fieldAt(5).value, "7");
  }
}

TEST(ClientRequestTest, TheNextRequestOnTheConnectionStartsFromAnEmptyStore) {
  RequestFieldStore fields;
  std::string body = "the last request's body";
  {
    const std::string_view input = "GET /v1/models HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n";
    ClientRequest request(fields, body);
    ASSERT_FALSE(parse(request, input, 64));
    EXPECT_EQ(request.fieldCount(), 2u);
    EXPECT_EQ(request.body(), "");
  }
  const std::string_view input = "GET /health HTTP/1.0\r\nC: 3\r\n\r\n";
  ClientRequest request(fields, body);
  ASSERT_FALSE(parse(request, input, 64));
  ASSERT_EQ(request.fieldCount(), 1u);
  EXPECT_EQ(request["a"], "");
  EXPECT_EQ(request["c"], "3");
  EXPECT_EQ(request.version(), 10);
  EXPECT_FALSE(request.keep_alive());  // HTTP/1.0 without keep-alive
}

TEST(ClientRequestTest, AChunkedBodyIsJoinedAndConnectionCloseIsHonoured) {
  RequestFieldStore fields;
  std::string body;
  const std::string_view input =
      "POST /v1/completions HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n";
  ClientRequest request(fields, body);
  ASSERT_FALSE(parse(request, input, 3));
  EXPECT_EQ(request.body(), "abcde");
  EXPECT_FALSE(request.keep_alive());
}

TEST(ClientRequestTest, LimitsAndMalformedInputAreBeastsErrors) {
  RequestFieldStore fields;
  std::string body;
  {
    const std::string_view input = "POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n";
    ClientRequest request(fields, body);
    request.body_limit(10);
    EXPECT_EQ(parse(request, input, 64), http::error::body_limit);
  }
  {
    const std::string input = "GET / HTTP/1.1\r\nX: " + std::string(200, 'x') + "\r\n\r\n";
    ClientRequest request(fields, body);
    request.header_limit(64);
    EXPECT_EQ(parse(request, input, 512), http::error::header_limit);
  }
  {
    const std::string_view input = "HTTP/1.1 200 OK\r\n\r\n";  // a response on the request side
    ClientRequest request(fields, body);
    EXPECT_TRUE(parse(request, input, 64));
  }
}

}  // namespace
}  // namespace switchyard::gateway
