// `switchyard drain-wait --gateway URL --pod NAME --timeout T`: for a vLLM Pod's preStop hook.
// Asks the gateway to drain the Pod's replica (POST /admin/drain; idempotent, and at once
// rather than when the gateway sees the Pod's deletion), then polls GET /admin/drain/<NAME>
// until the gateway reports it empty: draining, nothing in flight on any gateway, and settled
// (every gateway has seen the drain). With several --gateway URLs every one must agree.
//
// Exit codes: 0 the replica is empty (or not in any gateway's fleet: nothing to wait for);
// 1 the timeout passed first (the Pod is then stopped anyway: a preStop hook cannot hold it past
// its grace period); 2 a bad argument. A gateway that does not answer is asked again until the
// timeout. Output: one line per change of the in-flight count, on stderr.
//
// A gateway whose admin listener requires bearer tokens (admin_auth.keys_file) is called with
// the token read from --token-file (or $SWITCHYARD_ADMIN_TOKEN_FILE): a file holding the key
// `switchyard keys add` printed, surrounding whitespace ignored. An unreadable or empty file is
// a bad argument (exit 2); a refused token (401/403) is reported and exits 2 at once, since
// waiting longer cannot help.
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"

namespace switchyard::cli {

struct DrainWaitOptions {
  std::vector<std::string> gateways;  // http://HOST:PORT of each gateway's admin listener
  std::string pod;
  std::string timeout = "300s";  // a duration like 90s, 2m, or seconds
  std::string interval = "500ms";
  bool drain = true;  // POST /admin/drain first
  std::string token_file;  // "" none (then $SWITCHYARD_ADMIN_TOKEN_FILE, if set)
};

// The token in `path` without surrounding whitespace; "" with `error` set when unreadable,
// empty, or holding more than one word.
std::string readAdminToken(const std::string& path, std::string& error);

int runDrainWait(const DrainWaitOptions& options);

// "http://host:port[/]" -> host, port; false when malformed.
bool parseGatewayUrl(const std::string& url, std::string& host, uint16_t& port);
// "90s", "2m30s", "500ms" or a plain number of seconds ("30", "1.5").
bool parseTimeoutText(const std::string& text, TimeNs& out);

}  // namespace switchyard::cli
