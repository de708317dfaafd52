#pragma once
// The catalog tests' fake homes: each tool's folder layout, built from the bundled stories260K,
// and files to serve from the hub fixture.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "catalog/local_models.h"
#include "hub_fixture.h"
#include "model_test_helpers.h"

namespace inferscope::testing_catalog {

namespace fs = std::filesystem;
using testing_model::kStories;

inline std::string readAll(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}
inline void writeAll(const fs::path& p, std::string_view bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

// stories260K plus an 8 MiB tensor nobody reads: a file longer than the 4 MiB a header read takes.
inline std::string bigModelBytes() {
    auto f = GgufFile::open(kStories);
    EXPECT_TRUE(f);
    GgufWriter w;
    for (const auto& kv : f->metadata()) w.add(std::string(kv.key), GgufMetaValue::copyOf(kv.value));
    for (const auto& t : f->tensors()) {
        auto data = f->tensorData(t);
        w.addTensor(std::string(t.name), std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.nDims), t.type(), data);
    }
    std::vector<uint8_t> zeros(size_t(8) << 20, 0);
    w.addTensor("zz.padding", {1024, 2048}, GgmlType::F32, zeros);
    auto image = w.toBytes();
    EXPECT_TRUE(image);
    return std::string(image->begin(), image->end());
}

// A home with every tool's layout, each holding a copy (or a link) of stories260K.
struct FakeHome {
    fs::path root;
    catalog::Environment env;
    std::string ollamaBlobDigest;

    explicit FakeHome(const fs::path& dir) : root(dir) {
        env.home = (root / "home").string();
        env.systemOllamaModels = (root / "system-ollama").string();  // the service's folder, absent
        const fs::path home = env.home;
        const std::string model = readAll(kStories);
        const std::string sha = testing_hub::sha256Hex(model);
        ollamaBlobDigest = "sha256:" + sha;

        // Ollama: a manifest per tag, the blob once, and a non-GGUF layer (the template) beside it.
        const fs::path ollama = home / ".ollama" / "models";
        writeAll(ollama / "blobs" / ("sha256-" + sha), model);
        const std::string tmpl = "{{ .Prompt }}";
        const std::string tmplSha = testing_hub::sha256Hex(tmpl);
        writeAll(ollama / "blobs" / ("sha256-" + tmplSha), tmpl);
        const std::string manifest =
            R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",)"
            R"("config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:)" + std::string(64, '0') +
            R"(","size":2},"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" + sha +
            R"(","size":)" + std::to_string(model.size()) + R"(},{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:)" +
            tmplSha + R"(","size":13}]})";
        writeAll(ollama / "manifests" / "registry.ollama.ai" / "library" / "stories" / "260k", manifest);
        writeAll(ollama / "manifests" / "registry.ollama.ai" / "library" / "stories" / "latest", manifest);
        // A pull not finished: the manifest names a blob that is not there.
        writeAll(ollama / "manifests" / "registry.ollama.ai" / "someone" / "partial" / "latest",
                 R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" +
                     std::string(64, 'a') + R"(","size":5}]})");

        // LM Studio: ~/.lmstudio/models/<publisher>/<repo>/<file>.gguf
        writeAll(home / ".lmstudio" / "models" / "lmstudio-community" / "stories260K-GGUF" / "stories260K-F32.gguf", model);

        // GPT4All: the data folder, a name from models3.json, and a download in progress.
        const fs::path gpt4all = home / ".local" / "share" / "nomic.ai" / "GPT4All";
        writeAll(gpt4all / "stories-260k.gguf", model);
        writeAll(gpt4all / "incomplete-other.gguf", model.substr(0, 1000));
        writeAll(home / ".cache" / "nomic.ai" / "GPT4All" / "models3.json",
                 R"([{"name":"Tiny Stories 260K","filename":"stories-260k.gguf","md5sum":"x"}])");

        // Jan (Tauri): llamacpp/models/<id>/model.yml naming a relative path.
        const fs::path jan = home / ".local" / "share" / "Jan" / "data";
        writeAll(jan / "llamacpp" / "models" / "stories-260k" / "model.gguf", model);
        writeAll(jan / "llamacpp" / "models" / "stories-260k" / "model.yml",
                 "model_path: llamacpp/models/stories-260k/model.gguf\nname: \"Stories 260K\"\nsize_bytes: 1185376\n");

        // Hugging Face hub cache: snapshots/<commit>/<file> -> ../../blobs/<sha>, a broken link, an .incomplete blob.
        const fs::path repo = home / ".cache" / "huggingface" / "hub" / "models--karpathy--tinyllamas";
        writeAll(repo / "blobs" / sha, model);
        writeAll(repo / "blobs" / (std::string(64, 'b') + ".incomplete"), model.substr(0, 500));
        writeAll(repo / "refs" / "main", "0123456789abcdef0123456789abcdef01234567");
        const fs::path snap = repo / "snapshots" / "0123456789abcdef0123456789abcdef01234567";
        fs::create_directories(snap / "stories");
        fs::create_symlink(fs::path("../../../blobs") / sha, snap / "stories" / "stories260K.gguf");
        fs::create_symlink(fs::path("../../blobs") / std::string(64, 'c'), snap / "missing.gguf");

        // llama.cpp's cache: <org>_<repo>_<file>.gguf with its .json.
        const fs::path llama = home / ".cache" / "llama.cpp";
        writeAll(llama / "ggml-org_stories_stories260K-Q8.gguf", model);
        writeAll(llama / "ggml-org_stories_stories260K-Q8.gguf.json",
                 R"({"etag":"\"x\"","lastModified":"x","url":"https://huggingface.co/ggml-org/stories/resolve/main/stories260K-Q8.gguf"})");
        writeAll(llama / "other.gguf.downloadInProgress", model.substr(0, 100));

        // Ours, with a partial download beside it.
        const fs::path ours = home / ".local" / "share" / "inferscope" / "models" / "org" / "repo";
        writeAll(ours / "model.gguf", model);
        writeAll(ours / "next.gguf.part", model.substr(0, 300));

        // A folder of the user's: a file that only claims to be GGUF.
        writeAll(root / "mine" / "notes.gguf", "not a model at all");
    }
};

}  // namespace inferscope::testing_catalog
