// The parsers of other tools' files and of the hub's answers, on exact inputs: what each takes,
// what each refuses (and that a refusal is "nothing", never a throw).
#include <gtest/gtest.h>

#include "catalog/header_cache.h"
#include "catalog/hub_responses.h"
#include "catalog/source_files.h"

using namespace inferscope::catalog;

TEST(CatalogFiles, OllamaManifestsAndNames) {
    const std::string sha(64, 'a');
    auto layers = parseOllamaManifest(R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" +
                                      sha + R"(","size":12},{"mediaType":"x","digest":"sha256:../../etc/passwd"},{"digest":5}]})");
    ASSERT_TRUE(layers);
    ASSERT_EQ(layers->size(), 1u);  // the traversal and the number are dropped
    EXPECT_EQ((*layers)[0].size, 12u);
    EXPECT_EQ(ollamaBlobName((*layers)[0].digest), "sha256-" + sha);
    EXPECT_FALSE(parseOllamaManifest("[1,2]"));
    EXPECT_FALSE(parseOllamaManifest(std::string(100000, '[')));
    EXPECT_EQ(ollamaDisplayName("registry.ollama.ai", "library", "llama3.2", "1b"), "llama3.2:1b");
    EXPECT_EQ(ollamaDisplayName("Registry.Ollama.AI", "me", "m", "latest"), "me/m:latest");
    EXPECT_EQ(ollamaDisplayName("hf.co", "org", "repo", "Q4_K_M"), "hf.co/org/repo:Q4_K_M");
}

TEST(CatalogFiles, JanGpt4AllLmStudioAndLlamaCpp) {
    auto yml = parseJanModelYml("model_path: 'llamacpp/models/a/model.gguf'\nname: Qwen 0.5B # comment\n  name: nested\nsize_bytes: 3\n");
    ASSERT_TRUE(yml);
    EXPECT_EQ(yml->modelPath, "llamacpp/models/a/model.gguf");
    EXPECT_EQ(yml->name, "Qwen 0.5B");
    EXPECT_FALSE(parseJanModelYml("name: x\n"));
    EXPECT_EQ(parseJanModelJsonName(R"({"id":"trinity-v1-7b","name":"Trinity 7B Q4"})"), "Trinity 7B Q4");
    EXPECT_EQ(parseJanModelJsonName(R"({"id":"trinity"})"), "trinity");
    EXPECT_EQ(parseIniValue("[General]\nmodelPath=/data/models/\n[network]\nmodelPath=/no\n", "modelPath"), "/data/models/");
    EXPECT_EQ(parseIniValue("[other]\nmodelPath=/no\n", "modelPath"), std::nullopt);
    auto names = parseGpt4allModelsJson(R"([{"name":"Llama 3 8B Instruct","filename":"Meta-Llama-3-8B-Instruct.Q4_0.gguf"},{"name":5}])");
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names["Meta-Llama-3-8B-Instruct.Q4_0.gguf"], "Llama 3 8B Instruct");
    EXPECT_EQ(parseLmStudioHomePointer("  /home/u/.lmstudio\n"), "/home/u/.lmstudio");
    EXPECT_EQ(parseLmStudioHomePointer("relative"), std::nullopt);
    EXPECT_EQ(parseLmStudioDownloadsFolder(R"({"downloadsFolder":"/big/models"})"), "/big/models");
    EXPECT_EQ(parseLlamaCppMetadataUrl(R"({"url":"https://huggingface.co/a/b/resolve/main/c.gguf","etag":"x"})"),
              "https://huggingface.co/a/b/resolve/main/c.gguf");
    EXPECT_EQ(hubNameFromResolveUrl("https://huggingface.co/ggml-org/models/resolve/main/tinyllamas/stories260K.gguf?x=1"),
              "ggml-org/models/tinyllamas/stories260K.gguf");
    EXPECT_EQ(hubNameFromResolveUrl("https://example.com/file.gguf"), std::nullopt);
}

TEST(CatalogFiles, HubAnswers) {
    auto repos = parseSearchResponse(R"([{"id":"Qwen/Qwen2.5-0.5B-Instruct-GGUF","downloads":5,"likes":2,"gated":false},)"
                                     R"({"id":"meta-llama/Llama-3.2-1B","gated":"manual"},{"id":"../x"},{"modelId":"a/b"}])");
    ASSERT_TRUE(repos);
    ASSERT_EQ(repos->size(), 3u);
    EXPECT_EQ((*repos)[0].downloads, 5u);
    EXPECT_TRUE((*repos)[1].gated);
    EXPECT_EQ((*repos)[2].id, "a/b");
    const std::string sha(64, 'A');
    auto files = parseTreeResponse(R"([{"type":"file","path":"m.gguf","size":134,"lfs":{"oid":")" + sha +
                                   R"(","size":999,"pointerSize":134}},{"type":"directory","path":"d"},{"type":"file","path":"../e.gguf","size":1}])");
    ASSERT_TRUE(files);
    ASSERT_EQ(files->size(), 1u);
    EXPECT_EQ((*files)[0].size, 999u);
    EXPECT_EQ((*files)[0].sha256, std::string(64, 'a'));
    EXPECT_TRUE(validRepoId("bartowski/Llama-3.2-1B-Instruct-GGUF"));
    for (const char* bad : {"a", "a/b/c", "/b", "a/", "a--b/c", "a/..", "a/b c", "a/.hidden"}) EXPECT_FALSE(validRepoId(bad)) << bad;
    EXPECT_TRUE(validRepoPath("Q4_K_M/model.gguf"));
    for (const char* bad : {"", "/abs", "a//b", "a/../b", "./a", "a\\b"}) EXPECT_FALSE(validRepoPath(bad)) << bad;
    EXPECT_EQ(nextPageLink(R"(<https://hf.co/api/x?cursor=2>; rel="next")"), "https://hf.co/api/x?cursor=2");
    EXPECT_EQ(nextPageLink(R"(<https://hf.co/p>; rel="prev")"), std::nullopt);
    EXPECT_EQ(retryAfterSeconds(" 7", 1), 7);
    EXPECT_EQ(retryAfterSeconds("Wed, 21 Oct 2015 07:28:00 GMT", 3), 3);
    EXPECT_EQ(contentRangeStart("bytes 100-199/1000"), 100u);
    EXPECT_EQ(contentRangeStart("bytes */1000"), std::nullopt);
    EXPECT_EQ(resolveRedirect("https://hf.co/a/b", "/c/d"), "https://hf.co/c/d");
    EXPECT_EQ(resolveRedirect("https://hf.co/a/b", "https://cdn.hf.co/x"), "https://cdn.hf.co/x");
    EXPECT_EQ(resolveRedirect("https://hf.co/a/b", "//evil/x"), std::nullopt);
    EXPECT_EQ(resolveRedirect("https://hf.co/a/b", "file:///etc/passwd"), std::nullopt);
    EXPECT_EQ(originOf("HTTP://Example.com:8080/x?y"), "http://example.com:8080");
    EXPECT_EQ(originOf("https://user:pw@example.com/"), "");
}

TEST(CatalogFiles, TheHeaderCacheRefusesWhatItDidNotWrite) {
    HeaderCache cache;
    ModelSummary s;
    s.architecture = "llama";
    s.quantization = "Q4_K_M";
    s.parameters = 10;
    s.trainedContext = 4096;
    s.runnable = true;
    inferscope::LoadFootprint fp;
    fp.nLayer = fp.nHead = fp.nHeadKv = fp.headDim = fp.nEmbd = fp.nVocab = 1;
    fp.nCtxTrain = 4096;
    s.footprint = fp;
    cache.put("/m.gguf", {5, 6, s, ""});
    cache.put("/bad.gguf", {1, 2, std::nullopt, "not a GGUF file"});
    const HeaderCache back = HeaderCache::parse(cache.serialize());
    ASSERT_EQ(back.size(), 2u);
    ASSERT_TRUE(back.find("/m.gguf", 5, 6));
    EXPECT_EQ(back.find("/m.gguf", 5, 6)->summary->quantization, "Q4_K_M");
    EXPECT_FALSE(back.find("/m.gguf", 5, 7));  // another mtime: not this file
    EXPECT_EQ(back.find("/bad.gguf", 1, 2)->error, "not a GGUF file");
    EXPECT_EQ(back.serialize(), cache.serialize());  // the same cache, the same bytes (by path, whatever the hash order)
    // A head count of zero would divide by zero in the fit: such an entry is dropped.
    std::string text = cache.serialize();
    const size_t at = text.find("\"heads\":1");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 9, "\"heads\":0");
    EXPECT_EQ(HeaderCache::parse(text).size(), 1u);
    EXPECT_EQ(HeaderCache::parse("{\"version\":2,\"entries\":[]}").size(), 0u);
    EXPECT_EQ(HeaderCache::parse(std::string(10, '{')).size(), 0u);
}
