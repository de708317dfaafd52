#pragma once
// `inferscope-cli serve` as a child process on 127.0.0.1 and an ephemeral port (--port 0), for the
// server's integration tests: started, its port read from its first line, waited for until
// GET /health answers 200 (bounded), stopped with SIGTERM and reaped.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>


#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "raw_http.h"

namespace inferscope::testing_serve {

class ServeProcess {
public:
    explicit ServeProcess(std::vector<std::string> args) {
        int out[2];
        if (::pipe(out) != 0) return;
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(out[1], 1);
            ::close(out[0]);
            std::vector<std::string> all{INFERSCOPE_CLI, "serve", "--port", "0"};
            all.insert(all.end(), args.begin(), args.end());
            std::vector<char*> argv;
            for (auto& a : all) argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(INFERSCOPE_CLI, argv.data());
            ::_exit(127);
        }
        ::close(out[1]);
        out_ = out[0];
        // The first line names the port ("listening on http://127.0.0.1:PORT ..."): 60 s at most.
        std::string line;
        for (int i = 0; i < 600 && line.find('\n') == std::string::npos; ++i) {
            pollfd p{out_, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            char c[256];
            const ssize_t n = ::read(out_, c, sizeof c);
            if (n <= 0) break;
            line.append(c, size_t(n));
        }
        const auto at = line.find("127.0.0.1:");
        if (at != std::string::npos) port_ = std::stoi(line.substr(at + 10));
    }
    ~ServeProcess() {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            int status = 0;
            ::waitpid(pid_, &status, 0);
        }
        if (out_ >= 0) ::close(out_);
    }
    int port() const { return port_; }
    // The test reaped the process itself (waitpid): nothing left to stop.
    void forgetExited() { pid_ = -1; }
    pid_t pid() const { return pid_; }
    bool alive() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

    testing_http::Client client(std::string apiKey = {}) const { return testing_http::Client(port_, std::move(apiKey)); }
    // Waits (at most 60 s, polling) for /health to answer 200.
    bool waitReady(std::string apiKey = {}) const {
        for (int i = 0; i < 600 && port_ > 0; ++i) {
            auto c = client(apiKey);
            if (auto r = c.get("/health"); r && r->status == 200) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return false;
    }
    // Resident memory of the server process, in KiB (VmRSS).
    long rssKiB() const {
        std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
        for (std::string line; std::getline(in, line);)
            if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
        return -1;
    }

private:
    pid_t pid_ = -1;
    int out_ = -1;
    int port_ = -1;
};

}  // namespace inferscope::testing_serve
