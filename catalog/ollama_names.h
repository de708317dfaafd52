#pragma once
// Ollama's names for the model blobs of its store: the walk of manifests/<host>/<namespace>/
// <model>/<tag> (four levels, as ollama's manifest.go globs */*/*/*) that the library's scan and
// the model menu's labels share. A blob is a file called "sha256-<hex>": a path someone opened
// from Ollama's store says nothing by its name, its manifests do ("llama3.2:1b").

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace inferscope::catalog {

// Every model blob that a manifest under `root` names (`root`/blobs/sha256-…, whether it exists
// or not), with the names `ollama list` gives it, sorted. Manifests that cannot be read go to
// `notes` when given; at most 20,000 directory entries are looked at.
std::map<std::filesystem::path, std::vector<std::string>> ollamaModelBlobs(const std::filesystem::path& root,
                                                                           std::vector<std::string>* notes = nullptr);

// The name of the model whose blob `blob` is ("llama3.2:1b"; the first of several names, sorted),
// when it lies in an Ollama store's blobs folder and a manifest names it.
std::optional<std::string> ollamaNameOfBlob(const std::filesystem::path& blob);

}  // namespace inferscope::catalog
