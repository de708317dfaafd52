// inferscope-cli: the Inferscope engine headless.
//   generate  run a prompt, stream text or per-token JSON
//   info      what a GGUF model is
//   kv        the KV-cache calculator
//   synth     write a random-weight model of a named shape
//   bench     prefill/decode speed against the machine's bandwidth and matmul peak
//   tokenize / detokenize   a vocabulary's ids for a text and back
//   score     teacher-forced logits of a sequence per position, and its perplexity
//   perplexity  a text's perplexity, and KL divergence from a reference configuration
//   serve     an OpenAI-compatible HTTP server
//   models    the model library: GGUFs on this computer, the Hugging Face hub, downloads
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "common/kernel_set.h"
#include "option_checks.h"

namespace inferscope::cli {

int reportError(const std::string& message) {
    std::fprintf(stderr, "inferscope-cli: %s\n", message.c_str());
    return 1;
}

}  // namespace inferscope::cli

int main(int argc, char** argv) {
    using namespace inferscope::cli;
    // A forced kernel set this machine cannot run is refused here, never silently replaced.
    const auto kernels = inferscope::kernelSetFromEnvironment();
    if (!kernels) return reportError(kernels.error().message);
    if (const auto selected = inferscope::selectKernelSet(*kernels); !selected) return reportError(selected.error().message);
    CLI::App app{"Inferscope engine from the command line: run Llama-family GGUF models and inspect inference."};
    app.require_subcommand(1);
    app.fallthrough(false);
    int exitCode = 0;
    addGenerateCommand(app, exitCode);
    addInfoCommand(app, exitCode);
    addKvCommand(app, exitCode);
    addSynthCommand(app, exitCode);
    addBenchCommand(app, exitCode);
    addTokenizeCommands(app, exitCode);
    addScoreCommand(app, exitCode);
    addPerplexityCommand(app, exitCode);
    addCompareCommand(app, exitCode);
    addServeCommand(app, exitCode);
    addModelsCommand(app, exitCode);
    refuseEmptyValues(app, {"generate --prompt", "bench --prompt-tokens", "tokenize --text"});
    if (argc > 1 && argv[1][0] == '-' && std::string(argv[1]) != "--help" && std::string(argv[1]) != "-h")
        return reportError(std::string("unknown option '") + argv[1] + "' before the command (see --help)");
    if (argc > 1 && argv[1][0] != '-') {
        std::string names;
        bool known = false;
        for (const CLI::App* sub : app.get_subcommands({})) {
            names += (names.empty() ? "" : ", ") + sub->get_name();
            known = known || sub->get_name() == argv[1];
        }
        if (!known) return reportError(std::string("unknown command '") + argv[1] + "'; commands: " + names + " (see --help)");
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // One line, exit 1: scripts and the GUI read this.
        std::string what = e.what();
        for (char& c : what)
            if (c == '\n') c = ' ';
        return reportError(what + " (see --help)");
    } catch (const std::exception& e) {
        return reportError(e.what());
    }
    return exitCode;
}
