#include "engine/kv_event_publisher.h"

#include <fmt/format.h>
#include <zmq.h>

#include <array>
#include <stdexcept>

namespace switchyard::engine {
namespace {

std::string lastEndpoint(void* socket) {
  std::array<char, 256> buf{};
  size_t size = buf.size();
  if (zmq_getsockopt(socket, ZMQ_LAST_ENDPOINT, buf.data(), &size) != 0) return {};
  return std::string(buf.data());
}

void* bindSocket(void* context, int type, const std::string& endpoint) {
  void* socket = zmq_socket(context, type);
  if (socket == nullptr) throw std::runtime_error("kv events: cannot create a socket");
  const int linger = 0;
  zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof(linger));
  if (type == ZMQ_PUB) {
    const int hwm = 100000;
    zmq_setsockopt(socket, ZMQ_SNDHWM, &hwm, sizeof(hwm));
  }
  if (zmq_bind(socket, endpoint.c_str()) != 0) {
    const std::string error = zmq_strerror(zmq_errno());
    zmq_close(socket);
    throw std::runtime_error(fmt::format("kv events: cannot bind {}: {}", endpoint, error));
  }
  return socket;
}

}  // namespace

KvEventPublisher::KvEventPublisher(KvPublisherOptions options)
    : options_(std::move(options)), context_(zmq_ctx_new()) {
  try {
    pub_ = bindSocket(context_, ZMQ_PUB, options_.endpoint);
    bound_ = lastEndpoint(pub_);
    if (!options_.replay_endpoint.empty()) {
      router_ = bindSocket(context_, ZMQ_ROUTER, options_.replay_endpoint);
      replay_bound_ = lastEndpoint(router_);
    }
  } catch (...) {
    if (pub_ != nullptr) zmq_close(pub_);
    zmq_ctx_term(context_);
    throw;
  }
  thread_ = std::thread([this] { run(); });
}

KvEventPublisher::~KvEventPublisher() {
  running_.store(false);
  if (thread_.joinable()) thread_.join();
  if (pub_ != nullptr) zmq_close(pub_);
  if (router_ != nullptr) zmq_close(router_);
  zmq_ctx_term(context_);
}

void KvEventPublisher::publish(std::vector<fleet::kv_index::KvEvent> events, double ts) {
  const std::lock_guard lock(mutex_);
  fleet::kv_index::KvEventBatch& batch = queue_.emplace_back();
  batch.ts = ts;
  batch.events = std::move(events);
}

void KvEventPublisher::serveReplay() {
  // [identity, "", start]
  std::array<std::string, 3> frames;
  size_t n = 0;
  for (;;) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, router_, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&msg);
      return;
    }
    if (n < frames.size()) {
      frames[n].assign(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    }
    ++n;
    const bool more = zmq_msg_more(&msg) != 0;
    zmq_msg_close(&msg);
    if (!more) break;
  }
  if (n != 3) return;  // as vLLM: an invalid request is ignored
  const std::optional<int64_t> start = fleet::kv_index::decodeSequence(frames[2]);
  if (!start) return;
  const std::string& id = frames[0];
  auto send = [&](std::string_view seq, std::string_view payload) {
    zmq_send(router_, id.data(), id.size(), ZMQ_SNDMORE);
    zmq_send(router_, "", 0, ZMQ_SNDMORE);
    zmq_send(router_, seq.data(), seq.size(), ZMQ_SNDMORE);
    zmq_send(router_, payload.data(), payload.size(), 0);
  };
  for (const auto& [seq, payload] : buffer_) {
    if (seq >= *start) send(fleet::kv_index::encodeSequence(seq), payload);
  }
  send(fleet::kv_index::encodeSequence(-1), "");
}

void KvEventPublisher::run() {
  std::vector<fleet::kv_index::KvEventBatch> batches;
  while (running_.load()) {
    {
      const std::lock_guard lock(mutex_);
      batches.swap(queue_);
    }
    for (const fleet::kv_index::KvEventBatch& batch : batches) {
      std::string payload;
      fleet::kv_index::encodeKvEventBatch(batch, options_.encoding, payload);
      const std::string seq = fleet::kv_index::encodeSequence(next_seq_);
      zmq_send(pub_, options_.topic.data(), options_.topic.size(), ZMQ_SNDMORE);
      zmq_send(pub_, seq.data(), seq.size(), ZMQ_SNDMORE);
      zmq_send(pub_, payload.data(), payload.size(), 0);
      buffer_.emplace_back(next_seq_++, std::move(payload));
      if (buffer_.size() > options_.buffer_batches) buffer_.pop_front();
    }
    batches.clear();
    if (router_ != nullptr) {
      zmq_pollitem_t item{router_, 0, ZMQ_POLLIN, 0};
      if (zmq_poll(&item, 1, 5) > 0) serveReplay();
    } else {
      zmq_poll(nullptr, 0, 5);  // sleeps 5 ms
    }
  }
}

}  // namespace switchyard::engine
