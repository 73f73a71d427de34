// .npz reading and writing (see npz.h). A .npz file is a zip archive of .npy members; we read
// the central directory (zip64 extensions included: numpy writes them), inflate or copy each
// member, check its CRC, and parse its .npy header. Every malformation is a UserError naming
// the file (and the member) and what is wrong.
#include "solar/exec/npz.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "solar/util/error.h"
#include "solar/util/file.h"

namespace solar::exec {
namespace {

using Bytes = std::vector<unsigned char>;

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kMax32 = 0xFFFFFFFFu;
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01

// ---- the .npy dtypes ----------------------------------------------------------------------

struct NpyType {
  std::string_view descr;  // as numpy writes it on a little-endian machine
  ir::DType dtype;
};

// Read and written. bf16 and f8 have no numpy dtype: bf16 travels as its raw bits in '<u2'
// (ml_dtypes' bfloat16 is saved by numpy as '<V2', also read as bf16), f8 as raw bits in '|u1'
// (read back as u8: the program's declared dtype says which f8 it is, see reinterpret_bits).
constexpr NpyType kNpyTypes[] = {
    {"<f8", ir::DType::F64},  {"<f4", ir::DType::F32},   {"<f2", ir::DType::F16},
    {"<i8", ir::DType::I64},  {"<i4", ir::DType::I32},   {"|i1", ir::DType::I8},
    {"|u1", ir::DType::U8},   {"|b1", ir::DType::Bool},  {"<u2", ir::DType::BF16},
    {"<V2", ir::DType::BF16}, {"|V2", ir::DType::BF16},  {"|V1", ir::DType::U8},
    {"<c8", ir::DType::C64},  {"<c16", ir::DType::C128},
};

std::optional<ir::DType> dtype_of_descr(std::string_view descr) {
  for (const NpyType& t : kNpyTypes) {
    if (t.descr == descr) return t.dtype;
  }
  return std::nullopt;
}

std::string_view descr_of(ir::DType t) {
  switch (t) {
    case ir::DType::F64:
      return "<f8";
    case ir::DType::F32:
      return "<f4";
    case ir::DType::F16:
      return "<f2";
    case ir::DType::BF16:
      return "<u2";
    case ir::DType::F8E4M3:
    case ir::DType::F8E5M2:
    case ir::DType::U8:
    case ir::DType::F4E2M1X2:
      return "|u1";
    case ir::DType::I64:
      return "<i8";
    case ir::DType::I32:
      return "<i4";
    case ir::DType::I8:
      return "|i1";
    case ir::DType::Bool:
      return "|b1";
    case ir::DType::C64:
      return "<c8";
    case ir::DType::C128:
      return "<c16";
  }
  return "";
}

// ---- little-endian fields -----------------------------------------------------------------

uint64_t get_le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

void put_le(Bytes& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

// Reads little-endian fields from a byte range, failing (not crashing) past its end.
class Cursor {
 public:
  Cursor(const unsigned char* p, size_t n, std::string what)
      : p_(p), n_(n), what_(std::move(what)) {}
  uint64_t u(int bytes) {
    need(static_cast<size_t>(bytes));
    const uint64_t v = get_le(p_ + at_, bytes);
    at_ += static_cast<size_t>(bytes);
    return v;
  }
  std::string str(size_t n) {
    need(n);
    std::string s(reinterpret_cast<const char*>(p_ + at_), n);
    at_ += n;
    return s;
  }
  void skip(size_t n) {
    need(n);
    at_ += n;
  }
  size_t at() const { return at_; }

 private:
  void need(size_t n) const {
    if (n > n_ - at_) throw UserError(what_ + " is truncated");
  }
  const unsigned char* p_;
  size_t n_;
  size_t at_ = 0;
  std::string what_;
};

// ---- reading ------------------------------------------------------------------------------

class Archive {
 public:
  explicit Archive(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) fail("cannot open it: " + std::string(std::strerror(errno)));
    in_.seekg(0, std::ios::end);
    size_ = static_cast<uint64_t>(in_.tellg());
  }

  [[noreturn]] void fail(const std::string& what) const { throw UserError(label(what)); }
  std::string label(const std::string& what) const { return "'" + path_ + "': " + what; }

  uint64_t size() const { return size_; }

  Bytes read_at(uint64_t offset, uint64_t n, const std::string& what) {
    if (offset > size_ || n > size_ - offset) fail(what + " lies past the end of the file");
    Bytes b(static_cast<size_t>(n));
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(n));
    if (!in_) fail("cannot read " + what);
    return b;
  }

 private:
  std::string path_;
  std::ifstream in_;
  uint64_t size_ = 0;
};

struct Member {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0, local_offset = 0;
};

struct Directory {
  uint64_t entries = 0, offset = 0, size = 0;
};

// The offset of the end-of-central-directory record in `tail`, searching backwards.
std::optional<size_t> find_end_record(const Bytes& tail) {
  for (size_t at = tail.size() >= 22 ? tail.size() - 22 + 1 : 0; at-- > 0;) {
    if (get_le(&tail[at], 4) == kEndSig) return at;
  }
  return std::nullopt;
}

// The end-of-central-directory record, and its zip64 version when present.
Directory find_directory(Archive& a) {
  const uint64_t tail_size = std::min<uint64_t>(a.size(), 22 + 65535);
  const Bytes tail = a.read_at(a.size() - tail_size, tail_size, "the end of the archive");
  const std::optional<size_t> found = find_end_record(tail);
  if (!found) a.fail("not a zip archive (no end-of-central-directory record)");
  const size_t at = *found;
  Cursor c(&tail[at], tail.size() - at, a.label("the end-of-central-directory record"));
  c.skip(10);
  Directory d;
  d.entries = c.u(2);
  d.size = c.u(4);
  d.offset = c.u(4);
  const uint64_t end_offset = a.size() - tail_size + at;
  if (end_offset >= 20 && (d.offset == kMax32 || d.entries == 0xFFFF || d.size == kMax32)) {
    const Bytes loc = a.read_at(end_offset - 20, 20, "the zip64 locator");
    if (get_le(loc.data(), 4) == kZip64LocatorSig) {
      const Bytes rec = a.read_at(get_le(&loc[8], 8), 56, "the zip64 end record");
      if (get_le(rec.data(), 4) != kZip64EndSig) a.fail("bad zip64 end record");
      d.entries = get_le(&rec[32], 8);
      d.size = get_le(&rec[40], 8);
      d.offset = get_le(&rec[48], 8);
    }
  }
  return d;
}

// Replaces the 32-bit fields that hold 0xFFFFFFFF by the values of the zip64 extra field.
void apply_zip64(Member& m, const std::string& extra, const std::string& what) {
  Cursor c(reinterpret_cast<const unsigned char*>(extra.data()), extra.size(), what);
  while (c.at() + 4 <= extra.size()) {
    const uint64_t id = c.u(2);
    const uint64_t len = c.u(2);
    if (id != 1) {
      c.skip(len);
      continue;
    }
    if (m.usize == kMax32) m.usize = c.u(8);
    if (m.csize == kMax32) m.csize = c.u(8);
    if (m.local_offset == kMax32) m.local_offset = c.u(8);
    return;
  }
}

std::vector<Member> read_directory(Archive& a) {
  const Directory d = find_directory(a);
  const Bytes dir = a.read_at(d.offset, d.size, "the central directory");
  Cursor c(dir.data(), dir.size(), a.label("the central directory"));
  std::vector<Member> members;
  for (uint64_t i = 0; i < d.entries; ++i) {
    if (c.u(4) != kCentralSig) a.fail("bad central directory entry " + std::to_string(i));
    Member m;
    c.skip(4);
    m.flags = static_cast<uint16_t>(c.u(2));
    m.method = static_cast<uint16_t>(c.u(2));
    c.skip(4);
    m.crc = static_cast<uint32_t>(c.u(4));
    m.csize = c.u(4);
    m.usize = c.u(4);
    const size_t name_len = c.u(2), extra_len = c.u(2), comment_len = c.u(2);
    c.skip(8);
    m.local_offset = c.u(4);
    m.name = c.str(name_len);
    apply_zip64(m, c.str(extra_len), a.label("the zip64 field of member '" + m.name + "'"));
    c.skip(comment_len);
    members.push_back(std::move(m));
  }
  return members;
}

// The bytes of a member, uncompressed and CRC-checked.
Bytes member_bytes(Archive& a, const Member& m) {
  const std::string what = "member '" + m.name + "'";
  if (m.flags & 1) a.fail(what + " is encrypted");
  if (m.method != 0 && m.method != 8) {
    a.fail(what + " uses compression method " + std::to_string(m.method) +
           "; only stored and deflate members are supported");
  }
  const Bytes local = a.read_at(m.local_offset, 30, "the local header of " + what);
  if (get_le(local.data(), 4) != kLocalSig) a.fail("bad local header for " + what);
  const uint64_t data_offset = m.local_offset + 30 + get_le(&local[26], 2) + get_le(&local[28], 2);
  Bytes raw = a.read_at(data_offset, m.csize, "the data of " + what);
  Bytes out;
  if (m.method == 0) {
    out = std::move(raw);
  } else {
    if (m.usize > std::numeric_limits<size_t>::max() / 2) a.fail(what + " is too large");
    out.resize(static_cast<size_t>(m.usize));
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) a.fail("cannot start inflating " + what);
    z.next_in = raw.data();
    z.next_out = out.data();
    int rc = Z_OK;
    size_t in_left = raw.size(), out_left = out.size();
    while (rc == Z_OK) {  // zlib counts in 32-bit chunks
      const auto in_chunk = static_cast<uInt>(std::min<size_t>(in_left, kMax32));
      const auto out_chunk = static_cast<uInt>(std::min<size_t>(out_left, kMax32));
      z.avail_in = in_chunk;
      z.avail_out = out_chunk;
      rc = inflate(&z, Z_NO_FLUSH);
      in_left -= in_chunk - z.avail_in;
      out_left -= out_chunk - z.avail_out;
      if (rc == Z_OK && z.avail_in == in_chunk && z.avail_out == out_chunk) rc = Z_DATA_ERROR;
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END || out_left != 0) a.fail(what + " has corrupt compressed data");
  }
  if (out.size() != m.usize) a.fail(what + " has the wrong size");
  if (crc32_z(0, out.data(), out.size()) != m.crc) a.fail(what + " fails its CRC check");
  return out;
}

// ---- .npy headers -------------------------------------------------------------------------

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses numpy's header, a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string what) : s_(text), what_(std::move(what)) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen[3] = {false, false, false};
    expect('{');
    while (!peek('}')) {
      const std::string key = quoted();
      expect(':');
      if (key == "descr") {
        h.descr = quoted();
        seen[0] = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        seen[1] = true;
      } else if (key == "shape") {
        h.shape = tuple();
        seen[2] = true;
      } else {
        fail("unknown key '" + key + "'");
      }
      if (!peek('}')) expect(',');
    }
    if (!seen[0] || !seen[1] || !seen[2]) fail("descr, fortran_order or shape is missing");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw UserError(what_ + " has a malformed .npy header (" + why + ")");
  }
  void blanks() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n')) ++at_;
  }
  bool peek(char c) {
    blanks();
    return at_ < s_.size() && s_[at_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  std::string quoted() {
    blanks();
    if (at_ >= s_.size() || (s_[at_] != '\'' && s_[at_] != '"')) fail("expected a string");
    const char q = s_[at_++];
    const size_t end = s_.find(q, at_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string v(s_.substr(at_, end - at_));
    at_ = end + 1;
    return v;
  }
  bool boolean() {
    blanks();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (s_.substr(at_, std::strlen(word)) == word) {
        at_ += std::strlen(word);
        return value;
      }
    }
    fail("expected True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> v;
    expect('(');
    while (!peek(')')) {
      int64_t n = 0;
      size_t digits = 0;
      for (; at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9'; ++at_, ++digits) {
        if (n > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("dimension too large");
        n = n * 10 + (s_[at_] - '0');
      }
      if (digits == 0) fail("expected a dimension");
      if (at_ < s_.size() && s_[at_] == 'L') ++at_;  // Python 2 long
      v.push_back(n);
      if (!peek(')')) expect(',');
    }
    ++at_;
    return v;
  }

  std::string_view s_;
  std::string what_;
  size_t at_ = 0;
};

Tensor parse_npy(const Bytes& b, const std::string& what) {
  Cursor c(b.data(), b.size(), what);
  if (c.str(6) != "\x93NUMPY") throw UserError(what + " is not a .npy array (bad magic)");
  const uint64_t major = c.u(1);
  c.skip(1);
  if (major < 1 || major > 3) {
    throw UserError(what + " has unsupported .npy version " + std::to_string(major));
  }
  const size_t header_len = c.u(major == 1 ? 2 : 4);
  const NpyHeader h = HeaderParser(c.str(header_len), what).parse();
  if (h.fortran_order) {
    throw UserError(what +
                    " is in Fortran order; save a C-ordered array (numpy.ascontiguousarray)");
  }
  const std::optional<ir::DType> dtype = dtype_of_descr(h.descr);
  if (!dtype) {
    throw UserError(what + " has dtype '" + h.descr +
                    "'; supported: <f8 <f4 <f2 <i8 <i4 |i1 |u1 |b1, and bf16/f8 as raw bits "
                    "(<u2 <V2 |V1)");
  }
  uint64_t bytes = static_cast<uint64_t>(ir::dtype_size(*dtype));
  for (int64_t d : h.shape) {
    if (d != 0 && bytes > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
      throw UserError(what + " has an impossible shape");
    }
    bytes *= static_cast<uint64_t>(d);
  }
  if (b.size() - c.at() != bytes) {
    throw UserError(what + " holds " + std::to_string(b.size() - c.at()) +
                    " data bytes, its header says " + std::to_string(bytes));
  }
  Tensor t(*dtype, h.shape);
  if (bytes > 0) std::memcpy(t.data(), b.data() + c.at(), static_cast<size_t>(bytes));
  return t;
}

// ---- writing ------------------------------------------------------------------------------

// A .npy version 1 header (version 2 when it does not fit 64 KiB), padded so the data starts at
// a multiple of 64 bytes, as numpy writes it.
Bytes npy_header(const Tensor& t) {
  std::string dict =
      "{'descr': '" + std::string(descr_of(t.dtype())) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    dict += std::to_string(t.shape()[i]) + (t.shape().size() == 1      ? ","
                                            : i + 1 < t.shape().size() ? ", "
                                                                       : "");
  }
  dict += "), }";
  const bool v1 = dict.size() + 1 + 10 <= 65535;
  const size_t prefix = v1 ? 10 : 12;
  const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(v1 ? 1 : 2), 0};
  put_le(out, dict.size(), v1 ? 2 : 4);
  out.insert(out.end(), dict.begin(), dict.end());
  return out;
}

struct Written {
  std::string name;
  uint32_t crc;
  uint64_t size, offset;
  bool zip64() const { return size >= kMax32 || offset >= kMax32; }
};

// The zip64 extra field: the sizes (and the offset, in the central directory).
Bytes zip64_extra(const Written& w, bool central) {
  Bytes x;
  if (!w.zip64()) return x;
  put_le(x, 1, 2);
  put_le(x, central ? 24 : 16, 2);
  put_le(x, w.size, 8);
  put_le(x, w.size, 8);
  if (central) put_le(x, w.offset, 8);
  return x;
}

// The fields common to local and central headers, from "version needed" to the name length.
void put_common(Bytes& b, const Written& w, size_t extra_len) {
  put_le(b, w.zip64() ? 45 : 20, 2);  // version needed
  put_le(b, 0, 2);                    // flags
  put_le(b, 0, 2);                    // stored
  put_le(b, 0, 2);                    // time 00:00
  put_le(b, kDosDate, 2);
  put_le(b, w.crc, 4);
  put_le(b, w.zip64() ? kMax32 : w.size, 4);
  put_le(b, w.zip64() ? kMax32 : w.size, 4);
  put_le(b, w.name.size(), 2);
  put_le(b, extra_len, 2);
}

Bytes local_header(const Written& w) {
  const Bytes extra = zip64_extra(w, false);
  Bytes b;
  put_le(b, kLocalSig, 4);
  put_common(b, w, extra.size());
  b.insert(b.end(), w.name.begin(), w.name.end());
  b.insert(b.end(), extra.begin(), extra.end());
  return b;
}

Bytes central_entry(const Written& w) {
  const Bytes extra = zip64_extra(w, true);
  Bytes b;
  put_le(b, kCentralSig, 4);
  put_le(b, (3 << 8) | 45, 2);  // made by: Unix, zip 4.5
  put_common(b, w, extra.size());
  put_le(b, 0, 2);                        // comment length
  put_le(b, 0, 2);                        // disk
  put_le(b, 0, 2);                        // internal attributes
  put_le(b, uint64_t{0100644} << 16, 4);  // regular file, rw-r--r--
  put_le(b, w.zip64() ? kMax32 : w.offset, 4);
  b.insert(b.end(), w.name.begin(), w.name.end());
  b.insert(b.end(), extra.begin(), extra.end());
  return b;
}

Bytes end_records(uint64_t entries, uint64_t dir_offset, uint64_t dir_size) {
  Bytes b;
  const bool zip64 = entries >= 0xFFFF || dir_offset >= kMax32 || dir_size >= kMax32;
  if (zip64) {
    const uint64_t record_offset = dir_offset + dir_size;
    put_le(b, kZip64EndSig, 4);
    put_le(b, 44, 8);
    put_le(b, (3 << 8) | 45, 2);
    put_le(b, 45, 2);
    put_le(b, 0, 4);
    put_le(b, 0, 4);
    put_le(b, entries, 8);
    put_le(b, entries, 8);
    put_le(b, dir_size, 8);
    put_le(b, dir_offset, 8);
    put_le(b, kZip64LocatorSig, 4);
    put_le(b, 0, 4);
    put_le(b, record_offset, 8);
    put_le(b, 1, 4);
  }
  put_le(b, kEndSig, 4);
  put_le(b, 0, 4);
  put_le(b, zip64 ? 0xFFFF : entries, 2);
  put_le(b, zip64 ? 0xFFFF : entries, 2);
  put_le(b, zip64 ? kMax32 : dir_size, 4);
  put_le(b, zip64 ? kMax32 : dir_offset, 4);
  put_le(b, 0, 2);
  return b;
}

uint32_t crc_of(const Bytes& header, const Tensor& t) {
  uLong crc = crc32_z(0, header.data(), header.size());
  // zlib restarts the CRC for a null buffer, which an empty tensor may have.
  if (t.nbytes() > 0) crc = crc32_z(crc, static_cast<const Bytef*>(t.data()), t.nbytes());
  return static_cast<uint32_t>(crc);
}

void write_bytes(AtomicFile& f, const Bytes& b) { f.write(b.data(), b.size()); }

}  // namespace

TensorMap read_npz(const std::string& path) {
  Archive a(path);
  TensorMap out;
  for (const Member& m : read_directory(a)) {
    const bool npy = m.name.size() > 4 && m.name.compare(m.name.size() - 4, 4, ".npy") == 0;
    const std::string name = npy ? m.name.substr(0, m.name.size() - 4) : m.name;
    const std::string what = "'" + path + "': member '" + m.name + "'";
    Tensor t = parse_npy(member_bytes(a, m), what);
    if (!out.emplace(name, std::move(t)).second) a.fail("two members are named '" + name + "'");
  }
  return out;
}

void write_npz(const std::string& path, const TensorMap& tensors) {
  AtomicFile f(path);
  std::vector<Written> written;
  for (const auto& [name, t] : tensors) {  // std::map: sorted by name
    const Bytes header = npy_header(t);
    Written w{name + ".npy", crc_of(header, t), header.size() + t.nbytes(), f.written()};
    write_bytes(f, local_header(w));
    write_bytes(f, header);
    f.write(t.data(), t.nbytes());
    written.push_back(std::move(w));
  }
  const uint64_t dir_offset = f.written();
  for (const Written& w : written) write_bytes(f, central_entry(w));
  write_bytes(f, end_records(written.size(), dir_offset, f.written() - dir_offset));
  f.commit();
}

}  // namespace solar::exec
