// The shared primitives (include/solar/util/): sizes in bytes, lists, suggestions, checked and
// saturating integers, atomic files. Expected values worked out by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "solar/util/checked.h"
#include "solar/util/error.h"
#include "solar/util/file.h"
#include "solar/util/text.h"

namespace solar {
namespace {

namespace fs = std::filesystem;

TEST(ParseBytes, NumbersAndUnits) {
  EXPECT_EQ(parse_bytes("100000"), 100000u);
  EXPECT_EQ(parse_bytes("512B"), 512u);
  EXPECT_EQ(parse_bytes("1.5GiB"), 1610612736u);   // 1.5 x 2^30 = 1.5 x 1073741824
  EXPECT_EQ(parse_bytes("8GiB"), 8589934592u);     // 8 x 2^30
  EXPECT_EQ(parse_bytes("512MiB"), 536870912u);    // 512 x 2^20 = 2^29
  EXPECT_EQ(parse_bytes("256KiB"), 262144u);       // 256 x 1024
  EXPECT_EQ(parse_bytes("2TiB"), 2199023255552u);  // 2 x 2^40
  EXPECT_EQ(parse_bytes("50MB"), 50000000u);       // 50 x 10^6
  EXPECT_EQ(parse_bytes("2GB"), 2000000000u);
  EXPECT_EQ(parse_bytes("3kB"), 3000u);
  EXPECT_EQ(parse_bytes("1TB"), 1000000000000u);
  EXPECT_EQ(parse_bytes("1e6"), 1000000u);
  EXPECT_EQ(parse_bytes("2.5e3kb"), 2500000u);  // 2500 x 1000; units ignore case
  EXPECT_EQ(parse_bytes("32 mib"), 33554432u);  // spaces before the unit; 32 x 2^20 = 2^25
  EXPECT_EQ(parse_bytes("1.7"), 1u);            // rounded down
  EXPECT_EQ(parse_bytes("0"), 0u);
  EXPECT_EQ(parse_bytes("15EB"), std::nullopt);  // no exa units: the 'E' is not an exponent
}

TEST(ParseBytes, RefusesAnythingElse) {
  for (const char* bad : {"", "GiB", "-1", "+5", "1.2.3GiB", "8 GiBs", "8Gib!", "0x10", "inf",
                          "nan", " 8GiB", "1e", "16TiB0", "1e30"}) {
    EXPECT_EQ(parse_bytes(bad), std::nullopt) << "'" << bad << "'";
  }
  // 2^64 bytes does not fit; 16 TiB (2^44) does.
  EXPECT_EQ(parse_bytes("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_bytes("16TiB"), uint64_t{1} << 44);
}

TEST(Join, WordsAndNumbers) {
  EXPECT_EQ(join(std::vector<std::string>{"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join(std::vector<std::string>{}), "");
  EXPECT_EQ(join(std::vector<std::string>{"x"}, " or "), "x");
  // An empty word keeps its separators.
  EXPECT_EQ(join(std::vector<std::string>{"", "b"}, ","), ",b");
  EXPECT_EQ(join(std::vector<std::string_view>{"L2", "SMEM"}, " | "), "L2 | SMEM");
  EXPECT_EQ(join_ints({1, -2, 3}), "1, -2, 3");
  EXPECT_EQ(join_ints({}, "x"), "");
  // A count and its noun: plural unless the count is 1 (no "1 tensors").
  EXPECT_EQ(counted(1, "tensor"), "1 tensor");
  EXPECT_EQ(counted(0, "tensor"), "0 tensors");
  EXPECT_EQ(counted(2, "node"), "2 nodes");
}

TEST(DidYouMean, Identifiers) {
  const std::vector<std::string_view> names = {"Num", "N", "tanh", "reshape"};
  EXPECT_EQ(did_you_mean("Nun", names), " (did you mean 'Num'?)");  // 1 edit <= 3/3
  EXPECT_EQ(did_you_mean("n", names), " (did you mean 'N'?)");      // differs only in case
  EXPECT_EQ(did_you_mean("tanhh", names), " (did you mean 'tanh'?)");
  EXPECT_EQ(did_you_mean("reshap", names), " (did you mean 'reshape'?)");
  // One letter is never a few edits from another one: 'x' suggests nothing.
  EXPECT_EQ(did_you_mean("x", names), "");
  EXPECT_EQ(did_you_mean("zzzzzz", names), "");
  EXPECT_EQ(did_you_mean(std::string(65, 'N'), names), "");  // too long to compare
}

TEST(DidYouMean, LooseNames) {
  const std::vector<std::string> devices = {"H100-SXM", "H100-PCIe", "MI300X", "A6000"};
  EXPECT_EQ(did_you_mean("h100-sxm", devices, Suggest::Loose), " (did you mean 'H100-SXM'?)");
  // Containing the name, ignoring case: every one of them, up to three.
  EXPECT_EQ(did_you_mean("H100", devices, Suggest::Loose),
            " (did you mean 'H100-SXM' or 'H100-PCIe'?)");
  EXPECT_EQ(did_you_mean("MI300", devices, Suggest::Loose), " (did you mean 'MI300X'?)");
  EXPECT_EQ(did_you_mean("a600", devices, Suggest::Loose), " (did you mean 'A6000'?)");
  EXPECT_EQ(did_you_mean("zzz", devices, Suggest::Loose), "");
  // The identifier rules would not list two.
  EXPECT_EQ(did_you_mean("H100", devices), "");
}

TEST(Checked, FitsOrNot) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(checked_add(2, 3), 5);
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
  EXPECT_EQ(checked_sub(0, kMin), std::nullopt);  // -kMin = 2^63 does not fit
  EXPECT_EQ(checked_sub(-3, 4), -7);
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_EQ(checked_mul(int64_t{1} << 32, int64_t{1} << 31), std::nullopt);  // 2^63
  EXPECT_EQ(checked_mul(-(int64_t{1} << 32), int64_t{1} << 31), kMin);       // -2^63 fits
}

TEST(Saturating, ClampsAtTheLimit) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(saturating_add(int64_t{2}, int64_t{3}), 5);
  EXPECT_EQ(saturating_add(kMax, int64_t{1}), kMax);
  EXPECT_EQ(saturating_add(-kMax, int64_t{-5}), -kMax);
  EXPECT_EQ(saturating_mul(int64_t{1} << 40, int64_t{1} << 40), kMax);
  EXPECT_EQ(saturating_mul(-(int64_t{1} << 40), int64_t{1} << 40), -kMax);
  // With a limit: 1000 x 1000 = 10^6 > 1000; 30 + 40 = 70 <= 100.
  EXPECT_EQ(saturating_mul(int64_t{1000}, int64_t{1000}, 1000), 1000);
  EXPECT_EQ(saturating_add(int64_t{30}, int64_t{40}, 100), 70);
  EXPECT_EQ(saturating_add(int64_t{-80}, int64_t{-40}, 100), -100);
  constexpr uint64_t kUMax = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(saturating_add(kUMax, uint64_t{1}), kUMax);
  EXPECT_EQ(saturating_mul(uint64_t{1} << 32, uint64_t{1} << 32), kUMax);  // 2^64
  EXPECT_EQ(saturating_mul(uint64_t{1} << 31, uint64_t{1} << 32), uint64_t{1} << 63);
}

class AtomicFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "solar_util_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  size_t entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }
  fs::path dir_;
};

TEST_F(AtomicFiles, WritesInPiecesAndCommits) {
  {
    AtomicFile f(path("a.bin"));
    f.write("abc");
    f.write("de", 2);
    EXPECT_EQ(f.written(), 5u);
    EXPECT_FALSE(fs::exists(path("a.bin")));  // nothing in place before commit()
    f.commit();
  }
  EXPECT_EQ(read_text_file(path("a.bin")), "abcde");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFiles, WithoutCommitNothingIsLeft) {
  write_file_atomically(path("keep.txt"), "old");
  {
    AtomicFile f(path("keep.txt"));
    f.write("new");
  }
  EXPECT_EQ(read_text_file(path("keep.txt")), "old");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFiles, AllOrNone) {
  fs::create_directory(path("taken"));
  try {
    write_files_atomically({{path("one.txt"), "1"}, {path("taken"), "2"}});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write '" + path("taken") + "': it is a directory");
  }
  EXPECT_FALSE(fs::exists(path("one.txt")));
  EXPECT_EQ(entries(), 1u);  // only the directory
  EXPECT_THROW(write_files_atomically({{path("x"), "1"}, {path("./x"), "2"}}), UserError);
}

}  // namespace
}  // namespace solar
