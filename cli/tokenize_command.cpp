// inferscope-cli tokenize / detokenize: a GGUF file's vocabulary alone (vocab-only files work: no
// weights are read), the way llama.cpp's test-tokenizer-0 and llama-tokenize use it.
#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <memory>

#include "engine_choices.h"
#include "commands.h"
#include "option_checks.h"
#include "engine/bundled_model.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace inferscope::cli {
namespace {

constexpr uint64_t kMaxTextFileBytes = uint64_t(64) << 20;

struct TokenizeArgs {
    std::string model, text, file;
    bool special = false, addSpecial = false, json = false;
};

struct DetokenizeArgs {
    std::string model, ids;
    bool json = false;
};

Result<std::unique_ptr<Tokenizer>> loadTokenizer(const std::string& model) {
    auto path = modelOrBundled(model);
    if (!path) return std::unexpected(path.error());
    auto file = GgufFile::open(*path);
    if (!file) return std::unexpected(file.error());
    return Tokenizer::fromGguf(*file);
}

Result<std::string> readTextFile(const std::string& path) {
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) return fail(ErrorKind::Io, path + ": cannot read: " + ec.message());
    if (size > kMaxTextFileBytes)
        return fail(ErrorKind::InvalidArgument, path + ": " + std::to_string(size) + " bytes is more than the 64 MiB tokenize reads");
    std::string text(size_t(size), '\0');
    std::ifstream in(path, std::ios::binary);
    if (!in.read(text.data(), std::streamsize(size))) return fail(ErrorKind::Io, path + ": cannot read " + std::to_string(size) + " bytes");
    return text;
}

// What a token stands for in text: its bytes, or for control and unknown tokens their written
// form ("<|eot_id|>"), as llama.cpp's token_to_piece with special = true.
std::string shownPiece(const Tokenizer& tok, int32_t id) {
    const TokenType t = tok.type(id);
    if (t == TokenType::Control || t == TokenType::Unknown) return std::string(tok.piece(id));
    return tok.tokenBytes(id);
}

int runTokenize(const TokenizeArgs& a) {
    auto tok = loadTokenizer(a.model);
    if (!tok) return reportError(tok.error().message);
    std::string text = a.text;
    if (!a.file.empty()) {
        auto read = readTextFile(a.file);
        if (!read) return reportError(read.error().message);
        text = std::move(*read);
    }
    const Tokenizer& t = **tok;
    const auto ids = t.encode(text, a.addSpecial && t.addBosByDefault(), a.special, a.addSpecial && t.addEosByDefault());
    if (a.json) {
        nlohmann::ordered_json pieces = nlohmann::ordered_json::array();
        for (int32_t id : ids) pieces.push_back(shownPiece(t, id));
        const nlohmann::ordered_json j = {{"ids", ids}, {"pieces", pieces}};
        // A piece may be part of a character (byte tokens): shown as U+FFFD, the ids stay exact.
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
        return 0;
    }
    std::string line;
    for (int32_t id : ids) line += (line.empty() ? "" : " ") + std::to_string(id);
    std::printf("%s\n", line.c_str());
    return 0;
}

// "1,2,3" -> ids, each inside the vocabulary.
Result<std::vector<int32_t>> parseIds(const std::string& list, int32_t vocabSize) {
    std::vector<int32_t> ids;
    size_t pos = 0;
    while (pos <= list.size()) {
        const size_t comma = std::min(list.find(',', pos), list.size());
        const std::string item = list.substr(pos, comma - pos);
        int64_t id = -1;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
        if (item.empty() || ec != std::errc() || end != item.data() + item.size())
            return fail(ErrorKind::InvalidArgument, "--ids: '" + item + "' is not a token id (expected a list like 1,2,3)");
        if (id < 0 || id >= vocabSize)
            return fail(ErrorKind::InvalidArgument,
                        "--ids: " + item + " is outside the vocabulary of " + std::to_string(vocabSize) + " tokens");
        ids.push_back(int32_t(id));
        pos = comma + 1;
    }
    return ids;
}

int runDetokenize(const DetokenizeArgs& a) {
    auto tok = loadTokenizer(a.model);
    if (!tok) return reportError(tok.error().message);
    auto ids = parseIds(a.ids, (*tok)->vocabSize());
    if (!ids) return reportError(ids.error().message);
    const std::string text = (*tok)->decode(*ids);
    if (a.json) {
        const nlohmann::ordered_json j = {{"text", text}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
        return 0;
    }
    std::fwrite(text.data(), 1, text.size(), stdout);  // the exact bytes
    std::printf("\n");
    return 0;
}

}  // namespace

void addTokenizeCommands(CLI::App& app, int& exitCode) {
    auto t = std::make_shared<TokenizeArgs>();
    CLI::App* tokenize = app.add_subcommand("tokenize", "Token ids of a text with a GGUF file's vocabulary (vocab-only files work)");
    tokenize->add_option("--model,-m", t->model, "GGUF file (default: the bundled stories260K)");
    auto* text = tokenize->add_option("--text", t->text, "the text (may be empty)");
    auto* file = tokenize->add_option("--file", t->file, "read the text from this file (bytes as they are)");
    text->excludes(file);
    tokenize->add_flag("--special", t->special, "parse special tokens written in the text (<|eot_id|>, <|im_start|>...)");
    tokenize->add_flag("--add-special", t->addSpecial, "add BOS/EOS as the file says (tokenizer.ggml.add_bos_token/add_eos_token)");
    tokenize->add_flag("--json", t->json, "one JSON object {\"ids\": [...], \"pieces\": [...]}");
    tokenize->final_callback([t, text, file, &exitCode] {
        exitCode = text->count() + file->count() == 0 ? reportError("tokenize: give --text TEXT or --file PATH") : runTokenize(*t);
    });

    auto d = std::make_shared<DetokenizeArgs>();
    CLI::App* detokenize = app.add_subcommand("detokenize", "Text of token ids with a GGUF file's vocabulary");
    detokenize->add_option("--model,-m", d->model, "GGUF file (default: the bundled stories260K)");
    detokenize->add_option("--ids", d->ids, "comma-separated token ids, e.g. 1,2,3")->required();
    detokenize->add_flag("--json", d->json, "one JSON object {\"text\": ...}");
    detokenize->final_callback([d, &exitCode] { exitCode = runDetokenize(*d); });
}

}  // namespace inferscope::cli
