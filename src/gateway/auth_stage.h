// The auth stage of the request path (docs/security.md): which API key a request carries, the
// models that key may use, and its per-minute budgets of requests and tokens.
//
//   authenticate()   401 invalid_api_key unless the bearer key matches (or auth is off)
//   mayUse()         a model the key may not use is answered like one that does not exist (404
//                    model_not_found), so a key cannot probe which models the gateway serves
//   beforeRouting()  the key's budgets: this gateway's atomics when it is alone; with several
//                    gateways one call to shared state, or none of its own when the request's
//                    admission on its replica is shared anyway (the budgets ride along in that
//                    call: deferredQuota()); this gateway's share when shared state is away
//   settle()         at the end: the key's tokens counted from the response's usage, and its
//                    token budget corrected from the estimate to the real figure
//   appendHeaders()  x-ratelimit-{limit,remaining,reset}-{requests,tokens} on every answer
//                    to a keyed request, WWW-Authenticate on a 401
//
// One per worker, used from its thread only. The key lookup and the budgets' checks neither
// allocate nor lock: the key table is an immutable snapshot (auth/key_table.h) and the
// budgets are atomics (auth/quota_bucket.h).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "auth/key_store.h"
#include "fleet/fleet_snapshot.h"
#include "gateway/refusal.h"
#include "gateway/security_plane.h"
#include "observe/observer.h"
#include "state/shared_state.h"

namespace switchyard::gateway {

class AuthStage;

// One request's auth state, kept in its connection and reset per request.
struct RequestAuth {
  enum class Debit : uint8_t { kNone, kLocal, kShared };

  AuthStage* stage = nullptr;
  // Keeps `key` valid across the request's awaits (a worker-local reference: no count shared
  // with other workers changes per request).
  std::shared_ptr<const auth::KeyTable> table;
  const auth::KeyEntry* key = nullptr;  // null: auth off, or not authenticated
  bool challenge = false;               // answered 401: send WWW-Authenticate
  // The budgets as last seen, for the x-ratelimit-* headers.
  bool budget_known = false;
  int64_t remaining_requests = -1;
  int64_t remaining_tokens = -1;
  TimeNs reset_requests = 0;
  TimeNs reset_tokens = 0;
  // What was taken from the budgets, to settle at the end.
  Debit debit = Debit::kNone;
  int64_t debit_scale = 1;  // this gateway's share: units counted per unit (local decisions)
  int64_t debited_tokens = 0;
  // Budgets to be checked by the shared admission on the chosen replica.
  bool deferred = false;
  state::QuotaRequest quota;

  bool keyed() const { return key != nullptr; }
  bool hasBudgets() const { return key != nullptr && (key->rpm > 0 || key->tpm > 0); }
};

class AuthStage {
 public:
  AuthStage(SecurityPlane& security, observe::WorkerObserver& observer,
            state::SharedStateClient& shared);

  bool enabled() const { return security_.keys().enabled(); }
  bool forwardClientAuthorization() const {
    return security_.config().forward_client_authorization;
  }

  // Clears the previous request's state.
  void begin(RequestAuth& a) const;
  // nullopt when auth is off or `authorization` carries a known key (recorded in `a` and, by
  // name, in `record`); else the 401 to answer.
  std::optional<Refusal> authenticate(std::string_view authorization, RequestAuth& a,
                                      observe::RequestRecord& record);
  // Whether the request's key may use `model` (true when auth is off). Counts a denial.
  bool mayUse(const RequestAuth& a, std::string_view model) const;

  // The key's budgets for a request of about `estimated_tokens`. `shared_admission`: the
  // request's admission on its replica goes to shared state anyway (the budgets are deferred
  // to it). nullopt to go on; else the 429 to answer.
  boost::asio::awaitable<std::optional<Refusal>> beforeRouting(RequestAuth& a,
                                                               const fleet::ModelEntry& model,
                                                               int64_t estimated_tokens,
                                                               bool shared_admission, TimeNs now);
  // The request whose budgets ride along its shared admission, or null.
  static RequestAuth* deferredQuota(RequestAuth& a) { return a.deferred ? &a : nullptr; }
  // The shared admission answered for deferred budgets: nullopt admitted, else the 429.
  std::optional<Refusal> onSharedAnswer(RequestAuth& a, const state::QuotaAnswer& answer);
  // Shared state did not answer: this gateway decides on its share of the budgets, one of
  // `gateways` live ones.
  std::optional<Refusal> onSharedDegraded(RequestAuth& a, int gateways, TimeNs now);

  // End of request: usage counted for the key, budget settled. `record` has its tokens.
  void settle(RequestAuth& a, const observe::RequestRecord& record);

  // x-ratelimit-* (keyed requests with budgets) and WWW-Authenticate (401) header lines.
  static void appendHeaders(const RequestAuth& a, std::string& head);

 private:
  std::optional<Refusal> takeLocally(RequestAuth& a, int64_t scale, TimeNs now);
  Refusal refusal(RequestAuth& a, state::QuotaVerdict verdict, TimeNs retry_after);
  void note(RequestAuth& a, const state::QuotaAnswer& answer);

  SecurityPlane& security_;
  observe::WorkerObserver& observer_;
  state::SharedStateClient& shared_;
  auth::KeyTableCache tables_;
  // The current table under a worker-local reference count (see RequestAuth::table).
  std::shared_ptr<const auth::KeyTable> local_table_;
  const auth::KeyTable* local_source_ = nullptr;
};

// Settles a request's budgets when its pipeline ends, however it ends.
class AuthSettlement {
 public:
  AuthSettlement(AuthStage& stage, RequestAuth& a, const observe::RequestRecord& record)
      : stage_(stage), auth_(a), record_(record) {}
  ~AuthSettlement() { stage_.settle(auth_, record_); }
  AuthSettlement(const AuthSettlement&) = delete;
  AuthSettlement& operator=(const AuthSettlement&) = delete;

 private:
  AuthStage& stage_;
  RequestAuth& auth_;
  const observe::RequestRecord& record_;
};

// "6m0s", "1.5s", "250ms": the x-ratelimit-reset-* spelling OpenAI clients parse.
void appendResetDuration(std::string& out, TimeNs duration);

}  // namespace switchyard::gateway
