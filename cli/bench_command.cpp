#include "commands.h"
namespace inferscope::cli {
void addBenchCommand(CLI::App& app, int& exitCode) {}
}
