// .npz files: round trips, files written by numpy, files numpy must read, and malformed files
// (a UserError naming the file, never a crash). numpy fixtures are made at test time.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "exec_test_util.h"
#include "solar/exec/npz.h"
#include "solar/util/error.h"

namespace solar::exec {
namespace {

namespace fs = std::filesystem;
using test::make;
using test::user_error;
using test::values;

class Npz : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "solar_npz_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs a Python snippet with numpy imported as np and DIR set to the test directory.
  void python(const std::string& code) const {
    const std::string script = path("script.py");
    std::ofstream(script) << "import numpy as np\nDIR = '" << dir_.string() << "'\n" << code;
    ASSERT_EQ(std::system(("python3 " + script).c_str()), 0) << code;
  }

  std::string bytes(const std::string& file) const {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  void write_bytes(const std::string& file, const std::string& b) const {
    std::ofstream(file, std::ios::binary) << b;
  }

  fs::path dir_;
};

TensorMap every_dtype() {
  return {{"f64", make(ir::DType::F64, {2}, {1.5, -2.25})},
          {"f32", make(ir::DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5})},
          {"f16", make(ir::DType::F16, {2}, {0.5, 65504})},
          {"bf16", make(ir::DType::BF16, {2}, {1, -2})},
          {"f8e4m3", make(ir::DType::F8E4M3, {2}, {1, 448})},
          {"f8e5m2", make(ir::DType::F8E5M2, {1}, {1})},
          {"i64", make(ir::DType::I64, {2}, {-4611686018427387904.0, 7})},
          {"i32", make(ir::DType::I32, {2, 1}, {1, -2})},
          {"i8", make(ir::DType::I8, {2}, {-128, 127})},
          {"u8", make(ir::DType::U8, {2}, {0, 255})},
          {"bool", make(ir::DType::Bool, {3}, {1, 0, 1})},
          {"scalar", make(ir::DType::F64, {}, {3.5})},
          {"empty", make(ir::DType::F32, {0, 4}, {})}};
}

TEST_F(Npz, RoundTripKeepsDtypesShapesAndValues) {
  const TensorMap in = every_dtype();
  write_npz(path("a.npz"), in);
  const TensorMap out = read_npz(path("a.npz"));
  ASSERT_EQ(out.size(), in.size());
  for (const auto& [name, t] : in) {
    const Tensor& r = out.at(name);
    EXPECT_EQ(r.shape(), t.shape()) << name;
    if (name == "f8e4m3" || name == "f8e5m2") {  // f8 travels as raw bits in u8
      EXPECT_EQ(r.dtype(), ir::DType::U8) << name;
      EXPECT_EQ(values(reinterpret_bits(r, t.dtype())), values(t)) << name;
    } else {
      EXPECT_EQ(r.dtype(), t.dtype()) << name;
      EXPECT_EQ(values(r), values(t)) << name;
    }
  }
}

TEST_F(Npz, WritesTheSameBytesEveryTime) {
  write_npz(path("a.npz"), every_dtype());
  write_npz(path("b.npz"), every_dtype());
  const std::string a = bytes(path("a.npz"));
  EXPECT_EQ(a, bytes(path("b.npz")));
  ASSERT_GT(a.size(), 14u);
  EXPECT_EQ(a.substr(12, 2), std::string("\x21\x00", 2));  // DOS date 1980-01-01
}

TEST_F(Npz, NumpyReadsWhatWeWrite) {
  write_npz(path("a.npz"), every_dtype());
  python(R"(
d = np.load(DIR + '/a.npz')
assert sorted(d.files) == sorted(['f64', 'f32', 'f16', 'bf16', 'f8e4m3', 'f8e5m2', 'i64', 'i32',
                                  'i8', 'u8', 'bool', 'scalar', 'empty']), d.files
assert d['f64'].dtype == np.float64 and list(d['f64']) == [1.5, -2.25]
assert d['f32'].shape == (2, 3) and d['f32'].dtype == np.float32 and d['f32'][1, 2] == 5
assert d['f16'].dtype == np.float16 and list(d['f16']) == [0.5, 65504]
assert d['bf16'].dtype == np.uint16 and list(d['bf16']) == [0x3F80, 0xC000]  # raw bf16 bits
assert d['f8e4m3'].dtype == np.uint8 and list(d['f8e4m3']) == [0x38, 0x7E]  # raw f8 bits
assert d['i64'].dtype == np.int64 and list(d['i64']) == [-2**62, 7]
assert d['i32'].shape == (2, 1) and d['i32'][1, 0] == -2
assert d['i8'].dtype == np.int8 and list(d['i8']) == [-128, 127]
assert d['u8'].dtype == np.uint8 and list(d['u8']) == [0, 255]
assert d['bool'].dtype == np.bool_ and list(d['bool']) == [True, False, True]
assert d['scalar'].shape == () and d['scalar'] == 3.5
assert d['empty'].shape == (0, 4)
)");
}

constexpr const char* kNumpyFixture = R"(
d = dict(f8=np.array([1.5, -2.25]), f4=np.arange(6, dtype=np.float32).reshape(2, 3),
         f2=np.array([0.5, 65504], dtype=np.float16), i8=np.array([-2**62, 7]),
         i4=np.array([[1], [-2]], dtype=np.int32), i1=np.array([-128, 127], dtype=np.int8),
         u1=np.array([0, 255], dtype=np.uint8), b1=np.array([True, False, True]),
         scalar=np.float64(3.5), empty=np.zeros((0, 4), dtype=np.float32),
         bf16bits=np.array([0x3F80, 0xC000], dtype=np.uint16),
         void2=np.array([0x3F80, 0x4040], dtype=np.uint16).view('V2'),
         big=np.arange(100000, dtype=np.float32))
np.savez(DIR + '/plain.npz', **d)
np.savez_compressed(DIR + '/packed.npz', **d)
)";

void expect_numpy_fixture(const TensorMap& m) {
  ASSERT_EQ(m.size(), 13u);
  EXPECT_EQ(values(m.at("f8")), (std::vector<double>{1.5, -2.25}));
  EXPECT_EQ(m.at("f4").dtype(), ir::DType::F32);
  EXPECT_EQ(m.at("f4").shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(m.at("f4")), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(values(m.at("f2")), (std::vector<double>{0.5, 65504}));
  EXPECT_EQ(values(m.at("i8")), (std::vector<double>{-4611686018427387904.0, 7}));
  EXPECT_EQ(m.at("i4").shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values(m.at("i4")), (std::vector<double>{1, -2}));
  EXPECT_EQ(values(m.at("i1")), (std::vector<double>{-128, 127}));
  EXPECT_EQ(values(m.at("u1")), (std::vector<double>{0, 255}));
  EXPECT_EQ(m.at("b1").dtype(), ir::DType::Bool);
  EXPECT_EQ(values(m.at("b1")), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(m.at("scalar").shape(), std::vector<int64_t>{});
  EXPECT_EQ(values(m.at("scalar")), (std::vector<double>{3.5}));
  EXPECT_EQ(m.at("empty").shape(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(m.at("bf16bits").dtype(), ir::DType::BF16);  // 2-byte raw bits are bf16
  EXPECT_EQ(values(m.at("bf16bits")), (std::vector<double>{1, -2}));
  EXPECT_EQ(values(m.at("void2")), (std::vector<double>{1, 3}));
  EXPECT_EQ(m.at("big").get(99999), 99999.0);
}

TEST_F(Npz, ReadsNumpySavez) {
  python(kNumpyFixture);
  expect_numpy_fixture(read_npz(path("plain.npz")));
}

TEST_F(Npz, ReadsNumpySavezCompressed) {
  python(kNumpyFixture);
  expect_numpy_fixture(read_npz(path("packed.npz")));
}

TEST_F(Npz, RefusesFortranOrder) {
  python("np.savez(DIR + '/f.npz', x=np.asfortranarray(np.zeros((2, 3))))");
  EXPECT_EQ(user_error([&] { read_npz(path("f.npz")); }),
            "'" + path("f.npz") +
                "': member 'x.npy' is in Fortran order; save a C-ordered array "
                "(numpy.ascontiguousarray)");
}

TEST_F(Npz, RefusesUnsupportedDtypes) {
  python("np.savez(DIR + '/c.npz', z=np.zeros(3, dtype=np.uint32))");
  EXPECT_NE(user_error([&] { read_npz(path("c.npz")); }).find("member 'z.npy' has dtype '<u4'"),
            std::string::npos);
}

TEST_F(Npz, MalformedMembers) {
  python(R"(
import zipfile
def member(name, data):
    with zipfile.ZipFile(DIR + '/' + name + '.npz', 'w') as z:
        z.writestr('x.npy', data)
member('magic', b'hello world')
member('header', b'\x93NUMPY\x01\x00\x10\x00{"descr": 5}   \n')
header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (10,), }\n"
member('short', b'\x93NUMPY\x01\x00' + len(header).to_bytes(2, 'little') + header + b'\0' * 16)
member('version', b'\x93NUMPY\x07\x00')
)");
  const auto message = [&](const std::string& name) {
    return user_error([&] { read_npz(path(name + ".npz")); });
  };
  EXPECT_NE(message("magic").find("member 'x.npy' is not a .npy array"), std::string::npos);
  EXPECT_NE(message("header").find("member 'x.npy' has a malformed .npy header"),
            std::string::npos);
  EXPECT_NE(message("short").find("member 'x.npy' holds 16 data bytes, its header says 80"),
            std::string::npos)
      << message("short");
  EXPECT_NE(message("version").find("unsupported .npy version 7"), std::string::npos);
}

TEST_F(Npz, MissingFileAndNotAZip) {
  EXPECT_EQ(user_error([&] { read_npz(path("none.npz")); }),
            "'" + path("none.npz") + "': cannot open it: No such file or directory");
  write_bytes(path("text.npz"), "just text, no archive");
  EXPECT_EQ(user_error([&] { read_npz(path("text.npz")); }),
            "'" + path("text.npz") + "': not a zip archive (no end-of-central-directory record)");
}

TEST_F(Npz, DetectsCorruptData) {
  write_npz(path("a.npz"), {{"x", make(ir::DType::F64, {4}, {1, 2, 3, 4})}});
  std::string b = bytes(path("a.npz"));
  b[30 + 5 + 64 + 3] ^= 0x40;  // a byte of x's data: after the local header, the name, the header
  write_bytes(path("a.npz"), b);
  EXPECT_EQ(user_error([&] { read_npz(path("a.npz")); }),
            "'" + path("a.npz") + "': member 'x.npy' fails its CRC check");
}

// Every truncation and many single-byte corruptions of valid files: a UserError or a successful
// read, never a crash or another exception.
TEST_F(Npz, DamagedFilesNeverCrash) {
  python("np.savez_compressed(DIR + '/p.npz', a=np.arange(50.0), b=np.ones((3, 4), np.int8))");
  write_npz(path("s.npz"), {{"a", make(ir::DType::F32, {3}, {1, 2, 3})}});
  for (const std::string name : {"p.npz", "s.npz"}) {
    const std::string good = bytes(path(name));
    for (size_t n = 0; n < good.size(); ++n) {
      write_bytes(path("t.npz"), good.substr(0, n));
      EXPECT_THROW(read_npz(path("t.npz")), UserError) << name << " cut at " << n;
    }
    test::Random r(11);
    for (int i = 0; i < 200; ++i) {
      std::string bad = good;
      const auto at = static_cast<size_t>((r.next() + 1) / 2 * static_cast<double>(bad.size()));
      bad[at] = static_cast<char>(bad[at] ^ (1 + static_cast<int>((r.next() + 1) * 127)));
      write_bytes(path("t.npz"), bad);
      try {
        read_npz(path("t.npz"));
      } catch (const UserError&) {
      }
    }
  }
}

TEST_F(Npz, WriteFailureLeavesNothingBehind) {
  fs::create_directory(path("taken"));  // renaming a file onto a directory fails
  const std::string message = user_error([&] {
    write_npz(path("taken"), {{"x", make(ir::DType::F32, {1}, {1})}});
  });
  EXPECT_EQ(message.rfind("cannot write '" + path("taken") + "': ", 0), 0u) << message;
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir_)) entries += e.path().filename() != "taken";
  EXPECT_EQ(entries, 0u) << "a temporary file was left behind";
  EXPECT_NE(user_error([&] { write_npz(path("no/such/dir/a.npz"), {}); }), "");
}

TEST_F(Npz, OverwritesAnExistingFile) {
  write_npz(path("a.npz"), {{"x", make(ir::DType::F32, {1}, {1})}});
  write_npz(path("a.npz"), {{"y", make(ir::DType::F32, {1}, {2})}});
  const TensorMap m = read_npz(path("a.npz"));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(values(m.at("y")), (std::vector<double>{2}));
}

}  // namespace
}  // namespace solar::exec
