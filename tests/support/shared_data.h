#pragma once
// Golden data too large for tests/data/ (the 15-30 MB architecture models, every quantized file,
// the tokenizer vocabularies): read from the project's sibling folder ../shared when it exists
// (CI has it), skipped with a message when it does not, so the suite passes on a bare clone.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

namespace inferscope::testing_shared {

// ../shared relative to the source tree (INFERSCOPE_SHARED_DIR, set by tests/CMakeLists.txt).
inline std::filesystem::path sharedDir() { return std::filesystem::path(INFERSCOPE_SHARED_DIR); }

// The file's path when ../shared/<relative> exists, otherwise nullopt.
inline std::optional<std::string> sharedFile(const std::string& relative) {
    const auto path = sharedDir() / relative;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
    return path.string();
}

}  // namespace inferscope::testing_shared

// Declares `var` as the path of ../shared/<relative>, or skips the test saying what is missing.
#define INFERSCOPE_SHARED_FILE_OR_SKIP(var, relative)                                                  \
    const auto var##_opt = ::inferscope::testing_shared::sharedFile(relative);                         \
    if (!var##_opt) GTEST_SKIP() << "golden file ../shared/" << (relative) << " not found (" \
                                 << INFERSCOPE_SHARED_DIR << "): skipped";                          \
    const std::string var = *var##_opt
