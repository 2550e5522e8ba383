#include "tls_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

namespace switchyard::testing {
namespace {

namespace beast = boost::beast;
namespace bhttp = beast::http;

std::string sslError(const char* what, SSL* ssl, int ret) {
  std::string out = what;
  if (ssl != nullptr) {
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      out += ": certificate: ";
      out += X509_verify_cert_error_string(verify);
    }
    out += " (ssl error " + std::to_string(SSL_get_error(ssl, ret)) + ")";
  }
  char text[256];
  while (const unsigned long code = ERR_get_error()) {
    ERR_error_string_n(code, text, sizeof text);
    out += "; ";
    out += text;
  }
  return out;
}

}  // namespace

struct TlsClient::Impl {
  uint16_t port;
  TlsOptions options;
  std::chrono::milliseconds timeout;
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  int fd = -1;
  std::string leftover;

  ~Impl() {
    if (ssl != nullptr) SSL_free(ssl);
    if (ctx != nullptr) SSL_CTX_free(ctx);
    if (fd >= 0) ::close(fd);
  }
};

TlsClient::TlsClient(uint16_t port, TlsOptions options, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->port = port;
  impl_->options = std::move(options);
  impl_->timeout = timeout;
}

TlsClient::~TlsClient() = default;

bool TlsClient::handshake() {
  Impl& s = *impl_;
  if (s.ssl != nullptr) return error_.empty();
  ERR_clear_error();
  s.ctx = SSL_CTX_new(TLS_client_method());
  if (s.options.min_version) SSL_CTX_set_min_proto_version(s.ctx, s.options.min_version);
  if (s.options.max_version) {
    SSL_CTX_set_max_proto_version(s.ctx, s.options.max_version);
    SSL_CTX_set_security_level(s.ctx, 0);  // let old protocol versions be offered at all
    SSL_CTX_set_cipher_list(s.ctx, "DEFAULT:@SECLEVEL=0");
  }
  if (!s.options.ca_file.empty()) {
    SSL_CTX_load_verify_locations(s.ctx, s.options.ca_file.c_str(), nullptr);
    SSL_CTX_set_verify(s.ctx, SSL_VERIFY_PEER, nullptr);
  }
  if (!s.options.cert_file.empty()) {
    SSL_CTX_use_certificate_chain_file(s.ctx, s.options.cert_file.c_str());
    SSL_CTX_use_PrivateKey_file(s.ctx, s.options.key_file.c_str(), SSL_FILETYPE_PEM);
  }
  if (!s.options.alpn.empty()) {
    std::string wire;
    for (const std::string& p : s.options.alpn) wire += static_cast<char>(p.size()) + p;
    SSL_CTX_set_alpn_protos(s.ctx, reinterpret_cast<const unsigned char*>(wire.data()),
                            static_cast<unsigned>(wire.size()));
  }
  s.fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{};
  tv.tv_sec = s.timeout.count() / 1000;
  tv.tv_usec = (s.timeout.count() % 1000) * 1000;
  ::setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(s.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(s.port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    error_ = "connect failed";
    return false;
  }
  s.ssl = SSL_new(s.ctx);
  SSL_set_fd(s.ssl, s.fd);
  if (!s.options.sni.empty()) SSL_set_tlsext_host_name(s.ssl, s.options.sni.c_str());
  if (!s.options.ca_file.empty() && !s.options.verify_host.empty()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(s.ssl);
    if (X509_VERIFY_PARAM_set1_ip_asc(param, s.options.verify_host.c_str()) != 1) {
      X509_VERIFY_PARAM_set1_host(param, s.options.verify_host.c_str(), 0);
    }
  }
  const int ret = SSL_connect(s.ssl);
  if (ret != 1) {
    error_ = sslError("handshake", s.ssl, ret);
    return false;
  }
  return true;
}

std::string TlsClient::alpn() const {
  const unsigned char* data = nullptr;
  unsigned len = 0;
  if (impl_->ssl != nullptr) SSL_get0_alpn_selected(impl_->ssl, &data, &len);
  return data ? std::string(reinterpret_cast<const char*>(data), len) : std::string();
}

std::string TlsClient::version() const {
  return impl_->ssl != nullptr ? SSL_get_version(impl_->ssl) : "";
}

std::string TlsClient::peerCommonName() const {
  if (impl_->ssl == nullptr) return {};
  X509* cert = SSL_get1_peer_certificate(impl_->ssl);
  if (cert == nullptr) return {};
  char text[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, text, sizeof text);
  X509_free(cert);
  return text;
}

HttpResult TlsClient::request(std::string_view method, std::string_view target,
                              std::string_view body, const Headers& headers) {
  HttpResult result;
  if (!handshake()) {
    result.error = error_;
    return result;
  }
  Impl& s = *impl_;
  std::string out = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\n";
  out += "Host: 127.0.0.1\r\n";
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  if (!body.empty() || method == "POST") {
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  out += "\r\n";
  out.append(body);
  size_t written = 0;
  while (written < out.size()) {
    const int n = SSL_write(s.ssl, out.data() + written, static_cast<int>(out.size() - written));
    if (n <= 0) {
      result.error = sslError("write", s.ssl, n);
      return result;
    }
    written += static_cast<size_t>(n);
  }
  bhttp::response_parser<bhttp::string_body> parser;
  parser.eager(true);
  parser.body_limit(64u << 20);
  if (method == "HEAD") parser.skip(true);
  std::string buffer = std::move(s.leftover);
  s.leftover.clear();
  char chunk[16384];
  while (!parser.is_done()) {
    if (!buffer.empty()) {
      beast::error_code ec;
      const size_t used = parser.put(boost::asio::buffer(buffer), ec);
      buffer.erase(0, used);
      if (ec == bhttp::error::need_more) ec = {};
      if (ec) {
        result.error = "parse: " + ec.message();
        return result;
      }
      if (parser.is_done()) break;
      if (used > 0) continue;
    }
    const int n = SSL_read(s.ssl, chunk, sizeof chunk);
    if (n <= 0) {
      beast::error_code ec;
      if (parser.got_some()) parser.put_eof(ec);  // the body may end with the connection
      if (parser.got_some() && !ec && parser.is_done()) break;
      result.error = sslError("read", s.ssl, n);
      return result;
    }
    buffer.append(chunk, static_cast<size_t>(n));
  }
  s.leftover = std::move(buffer);
  auto& res = parser.get();
  result.status = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    result.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  result.body = std::move(res.body());
  return result;
}

}  // namespace switchyard::testing
