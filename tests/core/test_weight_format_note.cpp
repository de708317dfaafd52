// The Model panel's note on a quantized file's blocks: the main type's geometry and the file's
// own bits per weight, as a reader of the panel sees them.
#include <gtest/gtest.h>

#include "model/weight_format_note.h"

namespace inferscope {
namespace {

ModelInfo infoWith(std::map<std::string, int> types, double bitsPerWeight) {
    ModelInfo info;
    info.tensorTypes = std::move(types);
    info.bitsPerWeight = bitsPerWeight;
    return info;
}

TEST(WeightFormatNote, Q4KMixNamesTheMainTypeAndTheFilesBits) {
    // A Q4_K_M file: most matrices Q4_K, a few Q6_K, the norms F32. 144 bytes per 256 weights is
    // 4.5 bits; 16 / 4.85 = 3.30.
    EXPECT_EQ(weightFormatNote(infoWith({{"F32", 45}, {"Q4_K", 134}, {"Q6_K", 21}}, 4.85)),
              "Q4_K keeps weights in blocks of 256 stored in 144 bytes (4.50 bits per weight): 4-bit values, a 6-bit scale "
              "and minimum for each 32, and two 16-bit scales for those; a weight is scale × value − minimum. This file "
              "averages 4.85 bits per weight, 3.3× fewer bytes than 16-bit weights. Each generated token reads every "
              "weight once, so where memory bandwidth is the limit decode runs up to that much faster; prefill does many "
              "multiply-adds per weight read and gains less.");
}

TEST(WeightFormatNote, Q8_0BlocksOf32) {
    const std::string note = weightFormatNote(infoWith({{"F32", 11}, {"Q8_0", 22}}, 8.5));
    EXPECT_EQ(note.substr(0, note.find(". This file")),
              "Q8_0 keeps weights in blocks of 32 stored in 34 bytes (8.50 bits per weight): 8-bit values and one 16-bit "
              "scale; a weight is scale × value");
    EXPECT_NE(note.find("averages 8.50 bits per weight, 1.9× fewer bytes"), std::string::npos);
}

TEST(WeightFormatNote, UnquantizedFilesHaveNone) {
    EXPECT_EQ(weightFormatNote(infoWith({{"F32", 45}, {"F16", 155}}, 16.0)), "");
    EXPECT_EQ(weightFormatNote(infoWith({}, 0.0)), "");
}

TEST(WeightFormatNote, TheTypeWithMostTensorsLeads) {
    const std::string note = weightFormatNote(infoWith({{"Q5_K", 30}, {"Q6_K", 100}}, 6.1));
    EXPECT_EQ(note.rfind("Q6_K keeps weights in blocks of 256 stored in 210 bytes (6.56 bits per weight): 6-bit values", 0), 0u) << note;
}

}  // namespace
}  // namespace inferscope
