// Fuzz target: the kubeconfig parser (and the base64 and server-URL readers it uses) on
// arbitrary bytes. Each must answer credentials or a defined error, never throw or crash.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fleet/discovery/kubernetes/credentials.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::fleet::kubernetes;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Credentials credentials;
  // Relative files resolve under a directory that does not exist: reads fail as defined errors.
  const CredentialsResult result =
      parseKubeconfig(text, "/nonexistent-fuzz-dir", "", credentials);
  check(result.ok() == result.message.empty());
  if (result.ok()) {
    check(!credentials.host.empty());
    check(credentials.port != 0);
  }
  std::string decoded;
  if (decodeBase64(text, decoded)) check(decoded.size() <= text.size());
  std::string host;
  uint16_t port = 0;
  const CredentialsResult url = parseServerUrl(text, host, port);
  check(url.ok() == url.message.empty());
  if (url.ok()) check(!host.empty() && port != 0);
  return 0;
}
