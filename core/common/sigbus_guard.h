#pragma once
// Survives a memory-mapped file being truncated while it is in use.
//
// Reading a page of a file mapping that lies past the file's end raises SIGBUS, and Linux lets any
// program truncate a model file we have mapped (a download restarted, `cp` over it, a full disk
// while rewriting it). For a guarded mapping the SIGBUS handler maps anonymous zero pages over
// [faulting page, end of the mapping), marks the mapping faulted and returns: the read that
// faulted is retried and sees zeros. Whoever checks the flag afterwards (the engine, after each
// load step and forward pass) turns it into an error; the computation in between ran on zeros.
//
// Why no sigsetjmp/siglongjmp: the forward pass reads weights on OpenMP worker threads and inside
// oneDNN, where a jump would skip their barriers and locks (and a worker has no jump buffer of
// ours at all). Patching the mapping needs neither: the handler returns normally on any thread.
// Why no copy at load: the app maps multi-GB models precisely so as not to copy them.
//
// A SIGBUS outside every guarded mapping goes to the handler installed before ours (ASan's,
// libFuzzer's) or, if none, kills the process as it would have. The handler is installed on the
// first guardMapping() call; slots are lock-free so that the handler can read them.

#include <cstddef>

namespace inferscope::sigbus {

// Guards [base, base + length) (base page-aligned, as mmap returns it). Returns a slot for the
// calls below, or -1 when every slot is taken (the mapping then works unguarded).
int guardMapping(const void* base, size_t length);
// Forgets a slot (before the mapping is unmapped). -1 is ignored.
void unguardMapping(int slot);
// True once a SIGBUS was absorbed in the slot's mapping (its tail now reads as zeros).
bool mappingFaulted(int slot);

}  // namespace inferscope::sigbus
