// RecyclingAllocator: small blocks come back from the thread's lists, and an upstream answer's
// header parsed a second time allocates nothing.
#include "http/recycling_allocator.h"

#include <gtest/gtest.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "allocation_count.h"
#include "http/parse_buffered.h"

namespace switchyard::http {
namespace {

namespace bh = boost::beast::http;

TEST(RecyclingAllocatorTest, AFreedSmallBlockIsHandedOutAgainForItsSizeClass) {
  if (!detail::kRecycleBlocks) GTEST_SKIP() << "sanitizer build: blocks pass through";
  RecyclingAllocator<char> alloc;
  char* first = alloc.allocate(100);
  alloc.deallocate(first, 100);
  char* second = alloc.allocate(120);  // the same class (up to 128 bytes)
  EXPECT_EQ(second, first);
  char* other = alloc.allocate(20);  // another class: not that block
  EXPECT_NE(other, first);
  alloc.deallocate(second, 120);
  alloc.deallocate(other, 20);
}

TEST(RecyclingAllocatorTest, LargeBlocksAndAPeakAboveTheCapGoBackToTheHeap) {
  RecyclingAllocator<char> alloc;
  const size_t before = detail::threadBlockLists().freeBlocks();
  char* large = alloc.allocate(4096);
  large[4095] = 'x';
  alloc.deallocate(large, 4096);
  EXPECT_EQ(detail::threadBlockLists().freeBlocks(), before);
  // 300 bytes: the 512-byte class, which keeps at most this many blocks.
  constexpr size_t kKept = detail::BlockLists::kMaxFreeBytesPerClass / 512;
  std::vector<char*> peak;
  for (size_t i = 0; i < 3 * kKept; ++i) peak.push_back(alloc.allocate(300));
  for (char* block : peak) alloc.deallocate(block, 300);
  EXPECT_LE(detail::threadBlockLists().freeBlocks(), before + kKept);
}

TEST(RecyclingAllocatorTest, ThePeakOfABurstOfSmallFieldNodesIsKeptWhole) {
  if (!detail::kRecycleBlocks) GTEST_SKIP() << "sanitizer build: blocks pass through";
  // A worker parsing a burst of 256 answers holds ~1,500 field nodes of the 64-byte class at
  // once; all of them are kept for the next burst (a thread of its own: fresh lists).
  std::thread([] {
    RecyclingAllocator<char> alloc;
    std::vector<char*> burst;
    for (int i = 0; i < 1500; ++i) burst.push_back(alloc.allocate(48));
    for (char* block : burst) alloc.deallocate(block, 48);
    EXPECT_EQ(detail::threadBlockLists().freeBlocks(), 1500u);
    // The next burst takes every node from the lists: the same addresses come back.
    std::vector<char*> again;
    for (int i = 0; i < 1500; ++i) again.push_back(alloc.allocate(48));
    std::sort(burst.begin(), burst.end());
    std::sort(again.begin(), again.end());
    EXPECT_EQ(burst, again);
    EXPECT_EQ(detail::threadBlockLists().freeBlocks(), 0u);
    for (char* block : again) alloc.deallocate(block, 48);
    // The class's bound: 4,096 blocks of 64 bytes.
    std::vector<char*> peak;
    for (int i = 0; i < 5000; ++i) peak.push_back(alloc.allocate(48));
    for (char* block : peak) alloc.deallocate(block, 48);
    EXPECT_EQ(detail::threadBlockLists().freeBlocks(),
              detail::BlockLists::kMaxFreeBytesPerClass / 64);
  }).join();
}

TEST(RecyclingAllocatorTest, ABlockFreedOnAnotherThreadJoinsThatThreadsLists) {
  RecyclingAllocator<int> alloc;
  int* block = alloc.allocate(8);
  int* again = nullptr;
  size_t kept = 0;
  std::thread([&] {
    RecyclingAllocator<int> theirs;
    const size_t before = detail::threadBlockLists().freeBlocks();
    theirs.deallocate(block, 8);
    kept = detail::threadBlockLists().freeBlocks() - before;
    again = theirs.allocate(8);  // handed out again on this thread
    again[7] = 7;
    theirs.deallocate(again, 8);
  }).join();
  if (!detail::kRecycleBlocks) GTEST_SKIP() << "sanitizer build: blocks pass through";
  EXPECT_EQ(kept, 1u);
  EXPECT_EQ(again, block);
}

TEST(RecyclingAllocatorTest, AnAnswersHeaderParsedAgainAllocatesNothing) {
  if (!testing::allocationCounting() || !detail::kRecycleBlocks) GTEST_SKIP();
  const std::string answer =
      "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sat, 05 Dec 2026 09:00:00 GMT\r\n"
      "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: keep-alive\r\n"
      "x-request-id: 0123456789abcdef\r\n\r\n{}";
  // Allocations on this thread while a parser of this type parses the answer's header.
  auto parseOnce = [&]<class Parser>(Parser* /*type*/) -> uint64_t {
    boost::beast::flat_buffer buffer;
    buffer.reserve(answer.size());
    const size_t n =
        boost::asio::buffer_copy(buffer.prepare(answer.size()), boost::asio::buffer(answer));
    buffer.commit(n);
    char body[16];
    std::optional<Parser> parser;
    testing::AllocationScope scope;
    parser.emplace();
    parser->get().body().data = body;
    parser->get().body().size = sizeof(body);
    EXPECT_FALSE(parseBuffered(*parser, buffer));
    EXPECT_TRUE(parser->is_done());
    EXPECT_EQ(parser->get()[bh::field::content_type], "application/json");
    EXPECT_EQ(std::distance(parser->get().begin(), parser->get().end()), 6);
    parser.reset();
    return scope.count();
  };
  using DefaultParser = bh::response_parser<bh::buffer_body>;
  using RecycledParser = bh::response_parser<bh::buffer_body, RecyclingAllocator<char>>;
  EXPECT_GE(parseOnce(static_cast<DefaultParser*>(nullptr)), 6u);  // a node per field
  EXPECT_GE(parseOnce(static_cast<DefaultParser*>(nullptr)), 6u);  // ... every time
  parseOnce(static_cast<RecycledParser*>(nullptr));                // fills the lists
  EXPECT_EQ(parseOnce(static_cast<RecycledParser*>(nullptr)), 0u);
  EXPECT_EQ(parseOnce(static_cast<RecycledParser*>(nullptr)), 0u);
}

}  // namespace
}  // namespace switchyard::http
