#pragma once
// Runs an executable with arguments (no shell), capturing stdout, stderr and the exit code.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace inferscope::testing_process {

struct ProcessResult {
    int exitCode = -1;  // -1: did not exit normally (a crash is never a pass)
    std::string out, err;
    // stderr split into lines (without the newlines).
    std::vector<std::string> errLines() const {
        std::vector<std::string> lines;
        std::istringstream in(err);
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        return lines;
    }
};

inline ProcessResult runProcess(const std::string& exe, const std::vector<std::string>& args) {
    static int counter = 0;
    const auto base = std::filesystem::temp_directory_path() /
                      ("inferscope-proc-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    const std::string outPath = base.string() + ".out", errPath = base.string() + ".err";
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int o = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int e = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int devnull = ::open("/dev/null", O_RDONLY);
        ::dup2(o, 1);
        ::dup2(e, 2);
        ::dup2(devnull, 0);
        std::vector<char*> argv{const_cast<char*>(exe.c_str())};
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(exe.c_str(), argv.data());
        ::_exit(127);
    }
    ProcessResult r;
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFEXITED(status)) r.exitCode = WEXITSTATUS(status);
    auto slurp = [](const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        std::filesystem::remove(path);
        return ss.str();
    };
    r.out = slurp(outPath);
    r.err = slurp(errPath);
    return r;
}

}  // namespace inferscope::testing_process
