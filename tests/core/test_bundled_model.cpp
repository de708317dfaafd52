// Where the bundled model is found: the installed layout (/usr/bin → /usr/share/inferscope/models),
// the .tar.gz archive (the same tree under one folder), a flat portable folder, INFERSCOPE_MODEL_DIR,
// and the source tree only for executables inside the build tree.
#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

#include "engine/bundled_model.h"

using namespace inferscope;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp dir (outside the build tree), removed at the end.
struct TempTree {
    fs::path root;
    TempTree() {
        root = fs::temp_directory_path() / ("inferscope-bundled-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root);
        fs::create_directories(root);
    }
    ~TempTree() { fs::remove_all(root); }
    // Creates `rel` (and its folders) as a small file; returns its canonical path.
    fs::path touch(const fs::path& rel) const {
        fs::create_directories((root / rel).parent_path());
        std::ofstream(root / rel) << "GGUF";
        return fs::canonical(root / rel);
    }
};

fs::path selfExe() { return fs::read_symlink("/proc/self/exe"); }

}  // namespace

TEST(BundledModel, InstalledLayoutBesideBinDir) {
    TempTree t;
    const fs::path model = t.touch("usr/share/inferscope/models/stories260K.gguf");
    EXPECT_EQ(findBundledModelFor(t.root / "usr/bin/inferscope", nullptr), model);
    EXPECT_EQ(findBundledModelFor(t.root / "usr/bin/inferscope-cli", nullptr), model);
}

TEST(BundledModel, ArchiveLayoutUnderItsTopFolder) {
    TempTree t;  // what CPack's TGZ unpacks to: inferscope-<version>-Linux/{bin,share}
    const fs::path model = t.touch("inferscope-0.1.0-Linux/share/inferscope/models/stories260K.gguf");
    EXPECT_EQ(findBundledModelFor(t.root / "inferscope-0.1.0-Linux/bin/inferscope", nullptr), model);
}

TEST(BundledModel, FlatPortableFolder) {
    TempTree t;
    const fs::path model = t.touch("portable/models/stories260K.gguf");
    EXPECT_EQ(findBundledModelFor(t.root / "portable/inferscope", nullptr), model);
}

TEST(BundledModel, EnvironmentFolderComesFirst) {
    TempTree t;
    t.touch("usr/share/inferscope/models/stories260K.gguf");
    const fs::path mine = t.touch("mine/stories260K.gguf");
    EXPECT_EQ(findBundledModelFor(t.root / "usr/bin/inferscope", (t.root / "mine").c_str()), mine);
    // An empty value is as good as unset.
    EXPECT_EQ(bundledModelCandidates(t.root / "usr/bin/inferscope", "").size(),
              bundledModelCandidates(t.root / "usr/bin/inferscope", nullptr).size());
}

TEST(BundledModel, OutsideTheBuildTreeTheSourceTreeIsNotSearched) {
    TempTree t;
    ASSERT_EQ(fs::path(INFERSCOPE_RESOURCES_DIR).string().rfind(t.root.string(), 0), std::string::npos);
    EXPECT_EQ(findBundledModelFor(t.root / "usr/bin/inferscope", nullptr), std::nullopt);
    for (const auto& c : bundledModelCandidates(t.root / "usr/bin/inferscope", nullptr))
        EXPECT_NE(c.string().rfind(INFERSCOPE_RESOURCES_DIR, 0), 0u) << c;
}

TEST(BundledModel, InsideTheBuildTreeTheSourceTreeIsFound) {
    // This test runs from the build tree, where nothing is installed beside it.
    const auto found = findBundledModelFor(selfExe(), nullptr);
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(*found, fs::canonical(fs::path(INFERSCOPE_RESOURCES_DIR) / "models/stories260K.gguf"));
}
