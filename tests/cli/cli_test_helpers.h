#pragma once
// inferscope-cli run as a child process (INFERSCOPE_CLI, set per test target), and what every CLI
// suite checks of its output: JSON lines, one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "process_runner.h"

namespace inferscope::testing_cli {

using testing_process::ProcessResult;

inline ProcessResult cli(const std::vector<std::string>& args) { return testing_process::runProcess(INFERSCOPE_CLI, args); }

// Each line of stdout parsed as one JSON value.
inline std::vector<nlohmann::json> jsonLines(const std::string& out) {
    std::vector<nlohmann::json> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
}

// A failed command: exit code 1 and exactly one line on stderr, "inferscope-cli: …", containing `what`.
inline void expectOneLineError(const ProcessResult& r, const std::string& what) {
    EXPECT_EQ(r.exitCode, 1) << r.err;
    const auto lines = r.errLines();
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_NE(lines[0].find(what), std::string::npos) << lines[0];
    EXPECT_EQ(lines[0].rfind("inferscope-cli: ", 0), 0u) << lines[0];
}

}  // namespace inferscope::testing_cli
