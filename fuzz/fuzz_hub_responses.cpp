// libFuzzer target: what the Hugging Face hub (or anything answering at HF_ENDPOINT) sends the
// catalog's client (catalog/hub_responses.h): search and file-tree JSON up to the transfer's 8 MiB
// bound, and the headers the client acts on (Link, Retry-After, Content-Range, Location), and a
// GGUF header read from a prefix of a file (GgufFile::parseHeader, the 4 MiB first read). The first
// byte picks the parser. Properties: every repository id and file path kept is valid (no "..", no
// absolute path: a download's destination cannot leave our folder), every sha256 is 64 lowercase
// hex digits, a redirect resolves to an http(s) URL or nothing, and a prefix that "needs more"
// never also parsed.
#include <cstdint>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/hub_responses.h"
#include "gguf/gguf_file.h"
#include "require.h"

namespace {

using namespace inferscope;
using namespace inferscope::catalog;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1 || size > kMaxListingBytes + 1) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 5) {
        case 0:
            if (auto repos = parseSearchResponse(text))
                for (const auto& r : *repos) FUZZ_REQUIRE(validRepoId(r.id), "a listed repository id is valid");
            break;
        case 1:
            if (auto files = parseTreeResponse(text))
                for (const auto& f : *files) {
                    FUZZ_REQUIRE(validRepoPath(f.path), "a listed path is valid");
                    FUZZ_REQUIRE(f.sha256.empty() || (f.sha256.size() == 64 && f.sha256.find_first_not_of("0123456789abcdef") == std::string::npos),
                            "a sha256 is 64 lowercase hex digits");
                }
            break;
        case 2: {
            if (auto next = nextPageLink(text)) FUZZ_REQUIRE(!originOf(*next).empty(), "a next page is an http(s) URL");
            (void)retryAfterSeconds(text, 1);
            (void)contentRangeStart(text);
            const size_t split = text.find('\n');
            const std::string_view from = text.substr(0, split), location = split == std::string_view::npos ? "" : text.substr(split + 1);
            if (auto to = resolveRedirect(from, location)) FUZZ_REQUIRE(!originOf(*to).empty(), "a redirect goes to an http(s) URL");
            break;
        }
        case 3:
            (void)validRepoId(text);
            (void)validRepoPath(text);
            break;
        default: {
            // A prefix of a file whose size the input's first 4 bytes add to the prefix's.
            if (text.size() < 4) return 0;
            uint32_t extra = 0;
            std::memcpy(&extra, text.data(), 4);
            const std::vector<uint8_t> prefix(text.begin() + 4, text.end());
            bool more = false;
            auto parsed = GgufFile::parseHeader(prefix, prefix.size() + (extra & 0xffffff), &more);
            FUZZ_REQUIRE(!(parsed && more), "a header that parsed needs nothing more");
            if (parsed) FUZZ_REQUIRE(parsed->headerOnly() && parsed->fileSize() >= prefix.size(), "a prefix's file is at least the prefix");
            break;
        }
    }
    return 0;
}
