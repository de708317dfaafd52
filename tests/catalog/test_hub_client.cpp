// The hub client against the fixture hub on 127.0.0.1 (tests/support/hub_fixture.h): listings,
// headers by range requests, downloads verified and resumed, the token kept to the hub's origin,
// and each fault the hub or the network can produce explained in one line.
#include <gtest/gtest.h>

#include "catalog/hub_client.h"
#include "common/memory_budget.h"
#include <fmt/format.h>
#include "catalog_test_helpers.h"

using namespace inferscope;
using namespace inferscope::catalog;
using namespace inferscope::testing_catalog;
using testing_hub::HubFixture;
using testing_model::TempDir;

namespace {

struct Hub {
    HubFixture fixture;
    HubOptions options;
    std::vector<int> waits;  // what the client slept, in seconds (it never really sleeps here)
    std::string model = readAll(kStories);
    Hub() {
        options.endpoint = fixture.endpoint();
        options.stallTimeoutSeconds = 2;
        options.connectTimeoutSeconds = 5;
        options.sleep = [this](int s) { waits.push_back(s); };
        fixture.addFile("karpathy/tinyllamas", "stories260K.gguf", model);
        fixture.addFile("karpathy/tinyllamas", "big/stories-big.gguf", bigModelBytes());
        fixture.addGatedRepo("meta/gated");
    }
    DownloadRequest pull(const fs::path& folder, const std::string& file = "stories260K.gguf") {
        DownloadRequest r;
        r.repo = "karpathy/tinyllamas";
        r.file = file;
        r.modelsFolder = folder;
        return r;
    }
};

}  // namespace

TEST(HubClient, SearchAndFileListings) {
    Hub hub;
    auto repos = searchGgufRepos(hub.options, "tinyllamas");
    ASSERT_TRUE(repos) << repos.error().message;
    ASSERT_EQ(repos->size(), 1u);
    EXPECT_EQ((*repos)[0].id, "karpathy/tinyllamas");
    EXPECT_EQ((*repos)[0].downloads, 1002u);
    auto files = listGgufFiles(hub.options, "karpathy/tinyllamas");
    ASSERT_TRUE(files) << files.error().message;
    ASSERT_EQ(files->size(), 2u);  // README.md and the folder are not GGUF files
    EXPECT_EQ((*files)[1].path, "stories260K.gguf");
    EXPECT_EQ((*files)[1].size, hub.model.size());
    EXPECT_EQ((*files)[1].sha256, testing_hub::sha256Hex(hub.model));
    const auto reqs = hub.fixture.requests();
    EXPECT_EQ(reqs.back().target, "/api/models/karpathy/tinyllamas/tree/main?recursive=true");
}

TEST(HubClient, AHeaderIsReadWithARangeRequestAndGivesTheLocalFacts) {
    Hub hub;
    auto files = listGgufFiles(hub.options, "karpathy/tinyllamas");
    ASSERT_TRUE(files);
    const HubFile& big = (*files)[0];
    ASSERT_EQ(big.path, "big/stories-big.gguf");
    uint64_t read = 0;
    auto remote = readRemoteHeader(hub.options, "karpathy/tinyllamas", big, "main", &read);
    ASSERT_TRUE(remote) << remote.error().message;
    EXPECT_EQ(read, uint64_t(4) << 20);  // 4 MiB of a 9 MiB file
    EXPECT_LT(read, big.size);
    const auto bytes = bigModelBytes();
    auto local = GgufFile::parse(MappedFile::fromBytes(std::vector<uint8_t>(bytes.begin(), bytes.end())));
    ASSERT_TRUE(local);
    auto summary = summarizeModel(*local);
    EXPECT_EQ(remote->parameters, summary->parameters);
    EXPECT_EQ(remote->footprint->weightsMapped, summary->footprint->weightsMapped);
    EXPECT_EQ(remote->fileBytes, big.size);
    const auto reqs = hub.fixture.requests();
    ASSERT_GE(reqs.size(), 2u);
    EXPECT_EQ(reqs[reqs.size() - 2].target, "/karpathy/tinyllamas/resolve/main/big/stories-big.gguf");
    EXPECT_EQ(reqs.back().listener, "cdn");
    EXPECT_EQ(reqs.back().range, "bytes=0-4194303");
}

TEST(HubClient, ADownloadIsVerifiedAndTheTokenStaysOnTheHub) {
    Hub hub;
    hub.options.token = "hf_secret";
    TempDir dir;
    std::vector<DownloadProgress> progress;
    auto req = hub.pull(dir / "models");
    req.progress = [&](const DownloadProgress& p) { progress.push_back(p); };
    auto path = downloadModel(hub.options, req);
    ASSERT_TRUE(path) << path.error().message;
    EXPECT_EQ(*path, dir / "models" / "karpathy" / "tinyllamas" / "stories260K.gguf");
    EXPECT_EQ(readAll(*path), hub.model);
    EXPECT_FALSE(fs::exists(partialFileOf(*path)));
    ASSERT_FALSE(progress.empty());
    EXPECT_EQ(progress.back().bytesDone, hub.model.size());
    EXPECT_EQ(progress.back().bytesTotal, hub.model.size());
    for (const auto& r : hub.fixture.requests()) EXPECT_EQ(r.token, r.listener == "hub") << r.listener << " " << r.target;
    // Downloaded already: nothing transferred again.
    hub.fixture.clearRequests();
    ASSERT_TRUE(downloadModel(hub.options, req));
    for (const auto& r : hub.fixture.requests()) EXPECT_EQ(r.listener, "hub");
}

TEST(HubClient, AConnectionCutAt40PercentIsResumedWithARange) {
    Hub hub;
    TempDir dir;
    hub.fixture.cutAtPercent = 40;
    auto path = downloadModel(hub.options, hub.pull(dir / "m"));
    ASSERT_TRUE(path) << path.error().message;
    EXPECT_EQ(readAll(*path), hub.model);
    std::vector<std::string> ranges;
    for (const auto& r : hub.fixture.requests())
        if (r.listener == "cdn") ranges.push_back(r.range);
    ASSERT_EQ(ranges.size(), 2u);
    EXPECT_EQ(ranges[0], "");
    EXPECT_EQ(ranges[1], "bytes=" + std::to_string(hub.model.size() * 40 / 100) + "-");
}

TEST(HubClient, APartialDownloadIsResumedAfterARestart) {
    Hub hub;
    TempDir dir;
    hub.options.retries = 0;
    hub.fixture.cutAtPercent = 40;
    auto first = downloadModel(hub.options, hub.pull(dir / "m"));
    ASSERT_FALSE(first);
    EXPECT_NE(first.error().message.find("stories260K.gguf.part is kept: run the same command again to resume"), std::string::npos)
        << first.error().message;
    const fs::path dest = downloadDestination(dir / "m", "karpathy/tinyllamas", "stories260K.gguf");
    EXPECT_FALSE(fs::exists(dest));
    EXPECT_EQ(fs::file_size(partialFileOf(dest)), hub.model.size() * 40 / 100);
    // What a list of the repository's files can say of it before the download goes on.
    auto files = listGgufFiles(hub.options, "karpathy/tinyllamas");
    ASSERT_TRUE(files) << files.error().message;
    const HubFile& file = (*files)[1];
    ASSERT_EQ(file.path, "stories260K.gguf");
    LocalCopy copy = localCopyOf(dir / "m", "karpathy/tinyllamas", file);
    EXPECT_EQ(copy.path, dest);
    EXPECT_FALSE(copy.complete);
    EXPECT_EQ(copy.kept, hub.model.size() * 40 / 100);
    EXPECT_EQ(diskNeeded(file, copy.kept), hub.model.size() - copy.kept + kDiskMargin);
    // A part kept for another file of that name (another sha256) is not this file's.
    HubFile other = file;
    other.sha256 = std::string(64, '0');
    EXPECT_EQ(localCopyOf(dir / "m", "karpathy/tinyllamas", other).kept, 0u);
    hub.fixture.clearRequests();
    DownloadProgress last;
    auto req = hub.pull(dir / "m");
    req.progress = [&](const DownloadProgress& p) { last = p; };
    auto second = downloadModel(hub.options, req);
    ASSERT_TRUE(second) << second.error().message;
    EXPECT_EQ(readAll(*second), hub.model);
    EXPECT_EQ(last.resumedFrom, hub.model.size() * 40 / 100);
    copy = localCopyOf(dir / "m", "karpathy/tinyllamas", file);
    EXPECT_TRUE(copy.complete);
    EXPECT_EQ(copy.kept, 0u);
    for (const auto& r : hub.fixture.requests()) {
        if (r.listener == "cdn") {
            EXPECT_EQ(r.range, "bytes=" + std::to_string(hub.model.size() * 40 / 100) + "-");
        }
    }
}

TEST(HubClient, AServerThatIgnoresTheRangeMakesTheDownloadStartOver) {
    Hub hub;
    TempDir dir;
    hub.options.retries = 0;
    hub.fixture.cutAtPercent = 40;
    ASSERT_FALSE(downloadModel(hub.options, hub.pull(dir / "m")));
    hub.fixture.ignoreRange = true;
    auto path = downloadModel(hub.options, hub.pull(dir / "m"));
    ASSERT_TRUE(path) << path.error().message;
    EXPECT_EQ(readAll(*path), hub.model);
}

TEST(HubClient, AWrongHashLeavesNoFileWhereAModelWouldBeFound) {
    Hub hub;
    TempDir dir;
    hub.fixture.wrongHash = true;
    auto path = downloadModel(hub.options, hub.pull(dir / "m"));
    ASSERT_FALSE(path);
    EXPECT_EQ(path.error().kind, ErrorKind::BadFile);
    EXPECT_EQ(path.error().message.rfind("karpathy/tinyllamas/stories260K.gguf does not match the hub's sha256 (expected ", 0), 0u)
        << path.error().message;
    EXPECT_NE(path.error().message.find("): the download was deleted"), std::string::npos);
    const fs::path dest = downloadDestination(dir / "m", "karpathy/tinyllamas", "stories260K.gguf");
    EXPECT_FALSE(fs::exists(dest));
    EXPECT_FALSE(fs::exists(partialFileOf(dest)));
    // and the library does not list anything there
    catalog::Environment env;
    env.home = (dir / "nohome").string();
    env.systemOllamaModels = (dir / "none").string();
    ScanOptions scan;
    scan.env = env;
    scan.folders = {dir / "m"};
    EXPECT_TRUE(scanLocalModels(scan).models.empty());
}

TEST(HubClient, TooManyRequestsWaitsAsToldThenSucceeds) {
    Hub hub;
    hub.fixture.tooManyRequests = 2;
    auto files = listGgufFiles(hub.options, "karpathy/tinyllamas");
    ASSERT_TRUE(files) << files.error().message;
    EXPECT_EQ(hub.waits, (std::vector<int>{1, 1}));  // Retry-After: 1, twice
    hub.fixture.tooManyRequests = 100;
    hub.options.retries = 2;
    files = listGgufFiles(hub.options, "karpathy/tinyllamas");
    ASSERT_FALSE(files);
    EXPECT_EQ(files.error().message, "the hub is limiting requests (HTTP 429) for karpathy/tinyllamas: try again later");
    hub.fixture.tooManyRequests = 0;
}

// A disk without room for the rest of the file: refused before anything is written, in one line.
TEST(HubClient, NotEnoughDiskSpaceWritesNothing) {
    Hub hub;
    TempDir dir;
    auto req = hub.pull(dir / "m");
    fs::path asked;
    req.freeSpace = [&](const fs::path& folder) -> std::optional<uint64_t> {
        asked = folder;
        return uint64_t(10) << 20;  // 10 MiB: less than the file and the margin
    };
    hub.fixture.clearRequests();
    auto r = downloadModel(hub.options, req);
    ASSERT_FALSE(r);
    const fs::path dest = downloadDestination(dir / "m", "karpathy/tinyllamas", "stories260K.gguf");
    EXPECT_EQ(asked, dest.parent_path());
    EXPECT_EQ(r.error().kind, ErrorKind::Io);
    EXPECT_EQ(r.error().message, fmt::format("not enough disk space for karpathy/tinyllamas/stories260K.gguf: it needs {}, {} has {} free",
                                             formatBytes(hub.model.size() + kDiskMargin), dest.parent_path().string(), formatBytes(uint64_t(10) << 20)));
    EXPECT_FALSE(fs::exists(partialFileOf(dest)));
    EXPECT_FALSE(fs::exists(partialFileOf(dest).string() + ".json"));
    for (const auto& q : hub.fixture.requests()) EXPECT_NE(q.listener, "cdn");  // no byte of the file was asked
    // The real probe answers for a folder that does not exist yet (its parent's file system).
    EXPECT_TRUE(freeDiskSpace(dir / "not" / "yet"));
}

// A gated repository opens to the token of an account that accepted its conditions; another
// token is refused with what to do, in the caller's words.
TEST(HubClient, AGatedRepositoryOpensToAnAcceptedToken) {
    Hub hub;
    hub.fixture.addGatedRepo("meta/open-to-me", "hf_accepted");
    hub.fixture.addFile("meta/open-to-me", "m.gguf", hub.model);
    hub.options.token = "hf_someone_else";
    hub.options.tokenAdvice = "set the Hugging Face token below";
    hub.options.tokenName = "the token you entered";
    auto refused = listGgufFiles(hub.options, "meta/open-to-me");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind, ErrorKind::Denied);
    EXPECT_EQ(refused.error().message, "meta/open-to-me is gated (HTTP 403): accept its conditions on its page on the hub, then set the "
                                       "Hugging Face token below to a token of that account (the one set was refused)");
    hub.options.token = "hf_accepted";
    auto listed = listGgufFiles(hub.options, "meta/open-to-me");
    ASSERT_TRUE(listed) << listed.error().message;
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].path, "m.gguf");
}

TEST(HubClient, GatedMissingAndBadNamesAreExplainedInOneLine) {
    Hub hub;
    auto gated = listGgufFiles(hub.options, "meta/gated");
    ASSERT_FALSE(gated);
    EXPECT_EQ(gated.error().message, "meta/gated is gated (HTTP 403): accept its conditions on its page on the hub, then set "
                                     "HF_TOKEN to a token of that account");
    EXPECT_EQ(gated.error().kind, ErrorKind::Denied);
    auto missing = listGgufFiles(hub.options, "nobody/nothing");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().message, "nobody/nothing was not found on the hub (HTTP 404)");
    auto noFile = downloadModel(hub.options, hub.pull(fs::temp_directory_path() / "unused", "nope.gguf"));
    ASSERT_FALSE(noFile);
    EXPECT_EQ(noFile.error().message, "karpathy/tinyllamas has no GGUF file nope.gguf");
    auto bad = listGgufFiles(hub.options, "../etc");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().kind, ErrorKind::InvalidArgument);
    auto escape = downloadModel(hub.options, hub.pull(fs::temp_directory_path() / "unused", "../../evil.gguf"));
    ASSERT_FALSE(escape);
    EXPECT_EQ(escape.error().kind, ErrorKind::InvalidArgument);
}

TEST(HubClient, AStalledTransferIsDroppedAfterTheStallTimeout) {
    Hub hub;
    TempDir dir;
    hub.options.retries = 0;
    hub.options.stallTimeoutSeconds = 1;
    hub.fixture.stallNext = true;
    auto path = downloadModel(hub.options, hub.pull(dir / "m"));
    ASSERT_FALSE(path);
    EXPECT_EQ(path.error().message.rfind("the connection stalled (no data for 1 s) (karpathy/tinyllamas/stories260K.gguf); ", 0), 0u)
        << path.error().message;
    // The bytes that came are kept, and the next try continues from them.
    hub.options.retries = 4;
    auto again = downloadModel(hub.options, hub.pull(dir / "m"));
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(readAll(*again), hub.model);
}

TEST(HubClient, CancelKeepsThePartialFile) {
    Hub hub;
    TempDir dir;
    std::atomic<bool> cancel{false};
    hub.fixture.stallNext = true;  // 10% comes, then the transfer waits: cancel it then
    hub.options.stallTimeoutSeconds = 60;
    std::thread canceller([&] {
        for (int i = 0; i < 3000 && !cancel; ++i) {  // bounded: 30 s at most
            for (const auto& r : hub.fixture.requests())
                if (r.listener == "cdn") cancel = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    });
    auto req = hub.pull(dir / "m", "big/stories-big.gguf");
    req.cancel = &cancel;
    auto path = downloadModel(hub.options, req);
    canceller.join();
    ASSERT_FALSE(path);
    EXPECT_EQ(path.error().kind, ErrorKind::Cancelled);
    const fs::path dest = downloadDestination(dir / "m", "karpathy/tinyllamas", "big/stories-big.gguf");
    EXPECT_TRUE(fs::exists(partialFileOf(dest)));
    EXPECT_FALSE(fs::exists(dest));
}
