// A request's place in the gateway's admission queue (docs/admission.md), held for as long as it
// waits and given up the moment it is admitted on a replica, or whenever its stay ends otherwise.
#pragma once

#include "core/clock.h"
#include "gateway/request_queue.h"
#include "observe/observer.h"

namespace switchyard::gateway {

class QueueSeat {
 public:
  QueueSeat(RequestQueue& queue, RequestQueue::Waiter& waiter, observe::WorkerObserver& observer,
            observe::RequestRecord& record)
      : queue_(queue), waiter_(waiter), observer_(observer), record_(record) {}
  ~QueueSeat() { queue_.leave(waiter_); }
  QueueSeat(const QueueSeat&) = delete;
  QueueSeat& operator=(const QueueSeat&) = delete;

  // Leaves the queue (once) and observes the wait. A request admitted on a replica leaves before
  // it is forwarded: the requests behind it must not wait for its answer.
  // Whether it is in the queue (release() does something).
  bool queued() const { return waiter_.queue != nullptr; }
  void release(TimeNs now) {
    if (waiter_.queue == nullptr) return;
    waited_ = now - waiter_.enqueued_at;
    observer_.onQueueWait(record_, waited_);
    queue_.leave(waiter_);
  }
  // How long the request waited; -1 when it never queued.
  TimeNs waited() const { return waited_; }

 private:
  TimeNs waited_ = -1;
  RequestQueue& queue_;
  RequestQueue::Waiter& waiter_;
  observe::WorkerObserver& observer_;
  observe::RequestRecord& record_;
};

}  // namespace switchyard::gateway
