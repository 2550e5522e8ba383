// Transparent huge pages for a process whose heap is large and read at random (the fleet
// simulator: ~150 MB at 1,000 replicas, every event touching a different replica's state). With
// 4 KiB pages nearly every such access misses the TLB and the heap costs tens of thousands of page
// faults; with 2 MiB pages neither happens (docs/simulation.md, "Speed").
//
// glibc's malloc asks the kernel for huge pages only when its tunable glibc.malloc.hugetlb is set
// at start, so the process re-executes itself once with GLIBC_TUNABLES extended. Nothing happens
// when the tunable is already set (=0 opts out), when the kernel's THP mode is "never", or when
// the executable cannot be found; on a failed exec the process simply goes on as it is.
#pragma once

#include <string>

namespace switchyard {

// Does not return when it re-executes. `argv` as main() received it.
void reexecWithHugePages(char** argv);

// The GLIBC_TUNABLES value to re-execute with, or "" when no re-execution is wanted: `current`
// is the variable's value (nullptr: unset), `thp_mode` the contents of
// /sys/kernel/mm/transparent_hugepage/enabled ("" when unreadable).
std::string hugePageTunables(const char* current, const std::string& thp_mode);

}  // namespace switchyard
