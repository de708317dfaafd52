#pragma once
// The fuzz target: one input is a whole model file. It goes through everything that reads a model
// file's header before any weight is computed with — the GGUF reader (with its heap measured),
// the accessors, the Llama hyperparameters and model description, the chat-template detection,
// the SentencePiece tokenizer built from the vocabulary, and the encoding of a short text with
// and without special tokens. Shared by the libFuzzer executable (fuzz_model_file.cpp) and the
// ctest replay of every kept input (tests/core/test_fuzz_regressions.cpp).
//
// A defect is a crash, a sanitizer report, or a broken property below; broken properties print
// what broke on stderr and abort (a crash to libFuzzer, a death to ctest).

#include <cstdint>
#include <span>

namespace inferscope::fuzz {

// What the GGUF reader may hold on the heap for a file of `fileBytes` bytes, at its peak:
// kReaderBytesPerFileByte × the file + kReaderFixedBytes. No count the header claims can drive it:
// a claimed count reserves at most the bytes that remain in the file (ReaderHeap.
// ClaimedCountsReserveAtMostTheFile). What the factor pays for is entries actually present: the
// index of a file packed with the smallest entries the format allows (13-byte metadata entries,
// each a 120-byte GgufKv plus a hash-map node, in a vector that grows by doubling) peaks at 27.4 ×
// the file (ReaderHeap.MemoryFollowsContent). A real model's header is a few hundred KB of a file
// of hundreds of MB: its index is a fraction of the file.
inline constexpr uint64_t kReaderBytesPerFileByte = 32;
inline constexpr uint64_t kReaderFixedBytes = 64 * 1024;
inline uint64_t readerHeapBound(uint64_t fileBytes) { return kReaderBytesPerFileByte * fileBytes + kReaderFixedBytes; }

// Runs one input. Returns normally when every property held.
void runModelFile(std::span<const uint8_t> bytes);

}  // namespace inferscope::fuzz
