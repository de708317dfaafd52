#pragma once
// inferscope-cli subcommands. Each registers its options on a CLI11 app and runs after parsing;
// When the subcommand ran, exitCode holds its result (0 ok, 1 error with a one-line message on stderr).

#include <CLI/CLI.hpp>
#include <string>

namespace inferscope::cli {

void addGenerateCommand(CLI::App& app, int& exitCode);
void addInfoCommand(CLI::App& app, int& exitCode);
void addKvCommand(CLI::App& app, int& exitCode);
void addSynthCommand(CLI::App& app, int& exitCode);
void addBenchCommand(CLI::App& app, int& exitCode);
void addTokenizeCommands(CLI::App& app, int& exitCode);  // tokenize and detokenize
void addScoreCommand(CLI::App& app, int& exitCode);
void addPerplexityCommand(CLI::App& app, int& exitCode);
void addCompareCommand(CLI::App& app, int& exitCode);
void addServeCommand(CLI::App& app, int& exitCode);
void addModelsCommand(CLI::App& app, int& exitCode);  // list, search, files, pull

// Prints "inferscope-cli: <message>" on stderr and returns 1.
int reportError(const std::string& message);

}  // namespace inferscope::cli
