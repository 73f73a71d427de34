// The device database: what SOL analysis needs to know about an accelerator (dense peak rates per
// precision, memory levels), read from one YAML file per device. docs/devices.md describes the file
// format, the JSON form, the override keys and where the built-in files are found.
//
// Conventions, stated once: rates are dense (no 2:4 sparsity) and a multiply-accumulate counts as
// 2 FLOPs; int8 rates are integer ops/s under the same `peak_flops_per_s` keys. Capacities are
// bytes, bandwidths bytes/s, clocks Hz. Every figure carries the source it was taken from.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace solar::hw {

// The one list of precisions: X(enumerator, key in device files).
#define SOLAR_PRECISIONS(X) \
  X(Fp64, "fp64")           \
  X(Fp32, "fp32")           \
  X(Tf32, "tf32")           \
  X(Fp16, "fp16")           \
  X(Bf16, "bf16")           \
  X(Fp8, "fp8")             \
  X(Int8, "int8")           \
  X(Fp4, "fp4")

// The kinds of compute unit a rate belongs to: X(enumerator, key). `tensor` is the matrix engine
// (tensor cores, AMD matrix cores, TPU MXUs); `vector` the non-tensor ALUs (CUDA cores, SIMD).
#define SOLAR_COMPUTE_UNITS(X) \
  X(Tensor, "tensor")          \
  X(Vector, "vector")

// Memory levels, outermost first: X(enumerator, name in device files). SMEM is the aggregate
// software-managed on-chip memory (CUDA shared memory, AMD LDS).
#define SOLAR_MEMORY_LEVELS(X) \
  X(Dram, "DRAM")              \
  X(L2, "L2")                  \
  X(Smem, "SMEM")

// Links between devices, by role: X(enumerator, key in device files). `scale_up` is the
// device-to-device fabric of a node (NVLink / NVSwitch, AMD Infinity Fabric, TPU ICI); `host` the
// link to the host (PCIe, NVLink-C2C).
#define SOLAR_LINKS(X)   \
  X(ScaleUp, "scale_up") \
  X(Host, "host")

enum class Precision : uint8_t {
#define SOLAR_X(e, s) e,
  SOLAR_PRECISIONS(SOLAR_X)
#undef SOLAR_X
};

enum class ComputeUnit : uint8_t {
#define SOLAR_X(e, s) e,
  SOLAR_COMPUTE_UNITS(SOLAR_X)
#undef SOLAR_X
};

enum class MemoryLevel : uint8_t {
#define SOLAR_X(e, s) e,
  SOLAR_MEMORY_LEVELS(SOLAR_X)
#undef SOLAR_X
};

enum class Link : uint8_t {
#define SOLAR_X(e, s) e,
  SOLAR_LINKS(SOLAR_X)
#undef SOLAR_X
};

#define SOLAR_X(e, s) +1
inline constexpr size_t kLinkCount = 0 SOLAR_LINKS(SOLAR_X);
inline constexpr size_t kPrecisionCount = 0 SOLAR_PRECISIONS(SOLAR_X);
inline constexpr size_t kComputeUnitCount = 0 SOLAR_COMPUTE_UNITS(SOLAR_X);
inline constexpr size_t kMemoryLevelCount = 0 SOLAR_MEMORY_LEVELS(SOLAR_X);
#undef SOLAR_X

inline constexpr std::array<Precision, kPrecisionCount> kAllPrecisions = {
#define SOLAR_X(e, s) Precision::e,
    SOLAR_PRECISIONS(SOLAR_X)
#undef SOLAR_X
};
inline constexpr std::array<ComputeUnit, kComputeUnitCount> kAllComputeUnits = {
#define SOLAR_X(e, s) ComputeUnit::e,
    SOLAR_COMPUTE_UNITS(SOLAR_X)
#undef SOLAR_X
};
inline constexpr std::array<MemoryLevel, kMemoryLevelCount> kAllMemoryLevels = {
#define SOLAR_X(e, s) MemoryLevel::e,
    SOLAR_MEMORY_LEVELS(SOLAR_X)
#undef SOLAR_X
};

inline constexpr std::array<Link, kLinkCount> kAllLinks = {
#define SOLAR_X(e, s) Link::e,
    SOLAR_LINKS(SOLAR_X)
#undef SOLAR_X
};

std::string_view link_name(Link l);
std::optional<Link> link_from_name(std::string_view name);
std::string_view precision_name(Precision p);
std::string_view compute_unit_name(ComputeUnit u);
std::string_view memory_level_name(MemoryLevel l);
std::optional<Precision> precision_from_name(std::string_view name);
std::optional<ComputeUnit> compute_unit_from_name(std::string_view name);
std::optional<MemoryLevel> memory_level_from_name(std::string_view name);

// The source written for a figure set with apply_override.
inline constexpr std::string_view kOverrideSource = "command-line override";

// One number and where it comes from. `value` is positive and finite; `source` is not empty.
struct Figure {
  double value = 0;
  std::string source;

  bool operator==(const Figure&) const = default;
};

// A memory level. A level exists on a device when it has a capacity; the bandwidth is optional
// (required for DRAM).
struct MemorySpec {
  std::optional<Figure> capacity_bytes;
  std::optional<Figure> bandwidth_bytes_per_s;

  bool exists() const { return capacity_bytes.has_value(); }
  bool operator==(const MemorySpec&) const = default;
};

// A link of the device (docs/devices.md, "Interconnect"): what it is, and its bandwidth per
// device with both directions together, as vendors publish it (NVLink 4: 900 GB/s, 450 GB/s each
// way). A link exists when it has a bandwidth.
struct LinkSpec {
  std::string link;  // "NVLink 4 (18 links)", "PCIe Gen5 x16"; may be empty (set by --set)
  std::optional<Figure> bandwidth_bytes_per_s;
  // Where the link's switches reduce in the network (NVLink SHARP on NVSwitch): the source that
  // says so; empty when they do not (or it is not published). An all-reduce over it can move
  // the buffer once per device instead of a ring's 2(N-1)/N (docs/parallel.md).
  std::string in_network_reduction;
  bool exists() const { return bandwidth_bytes_per_s.has_value(); }
  // Each direction's bandwidth: half the published figure.
  double per_direction_bytes_per_s() const;
  bool operator==(const LinkSpec&) const = default;
};

using RateTable = std::array<std::optional<Figure>, kPrecisionCount>;

// The ceilings measured on a real chip of the device (`attainable:` in its file, written by
// `solar calibrate --attainable NAME`; docs/devices.md): what the fastest kernel measured reached,
// at most the datasheet's figure. Not a bound: another kernel may do better, so a SOL never uses
// them; reports show the SOL at these ceilings beside it (attainable_device).
struct Attainable {
  std::optional<Figure> dram_bandwidth_bytes_per_s;
  std::array<RateTable, kComputeUnitCount> peak_flops_per_s{};  // [ComputeUnit][Precision]

  const std::optional<Figure>& peak(ComputeUnit u, Precision p) const {
    return peak_flops_per_s[static_cast<size_t>(u)][static_cast<size_t>(p)];
  }
  bool operator==(const Attainable&) const = default;
};

// A device as loaded from its file. Invariants after loading (load_device_file checks them): name
// and vendor are not empty, at least one rate is present, DRAM exists with a bandwidth, and every
// figure is valid. A rate that is absent means "not available on this device (or not published)":
// never treat it as zero.
struct Device {
  std::string name;
  std::string vendor;
  std::string description;                                      // may be empty
  std::array<RateTable, kComputeUnitCount> peak_flops_per_s{};  // [ComputeUnit][Precision]
  std::array<MemorySpec, kMemoryLevelCount> memory{};           // [MemoryLevel]
  std::array<LinkSpec, kLinkCount> interconnect{};              // [Link]
  std::optional<Figure> compute_units;                          // SMs (NVIDIA) or CUs (AMD)
  std::optional<Figure> clock_hz;                               // rated boost clock
  // The shortest time from a kernel's launch to its completion on the device, seconds (an empty
  // kernel, back to back in one stream): the unfused fidelity's per-kernel floor
  // (docs/cache-state.md). Absent: no floor.
  std::optional<Figure> min_kernel_s;
  std::optional<Attainable> attainable;  // measured ceilings, when the file has them

  const std::optional<Figure>& peak(ComputeUnit u, Precision p) const {
    return peak_flops_per_s[static_cast<size_t>(u)][static_cast<size_t>(p)];
  }
  std::optional<Figure>& peak(ComputeUnit u, Precision p) {
    return peak_flops_per_s[static_cast<size_t>(u)][static_cast<size_t>(p)];
  }
  const MemorySpec& level(MemoryLevel l) const { return memory[static_cast<size_t>(l)]; }
  MemorySpec& level(MemoryLevel l) { return memory[static_cast<size_t>(l)]; }
  const LinkSpec& link(Link l) const { return interconnect[static_cast<size_t>(l)]; }
  LinkSpec& link(Link l) { return interconnect[static_cast<size_t>(l)]; }
  // DRAM bandwidth, always present on a loaded device (InternalError otherwise).
  double dram_bandwidth_bytes_per_s() const;

  bool operator==(const Device&) const = default;
};

// A present figure (a copy) and its path, the dotted key used by overrides and by the JSON
// `sources` object: `peak_flops_per_s.tensor.bf16`, `memory.DRAM.bandwidth_bytes_per_s`,
// `clock_hz`.
struct FigureEntry {
  std::string path;
  Figure figure;
};

// `d` at its measured ceilings: the DRAM bandwidth and each rate its `attainable` block has
// replace the datasheet's (the others stay); no attainable block of its own. InternalError when
// `d` has none.
Device attainable_device(const Device& d);

// Every present figure of `d`, in canonical order: tensor rates, vector rates (precisions in
// declaration order), memory levels outermost first (capacity, then bandwidth), compute_units,
// clock_hz, min_kernel_s.
std::vector<FigureEntry> list_figures(const Device& d);

// Every key apply_override accepts, in the order of list_figures (present or not), then the short
// forms `<level>_<field>` (e.g. `dram_bandwidth_bytes_per_s`).
const std::vector<std::string>& override_keys();

// Reads and validates a device file. Throws UserError: YAML syntax errors, unknown or duplicate
// keys, missing required keys, values that are not positive finite numbers, figures without a
// source. Messages start with `FILE:LINE:COL: error: `.
Device load_device_file(const std::string& path);

// The names of the built-in devices (data/hardware/<NAME>.yaml), in display order.
const std::vector<std::string>& builtin_device_names();

// The folder holding `hardware/*.yaml`, looked up in order (docs/devices.md): $SOLAR_DATA_DIR (if
// set, the only place looked at); `<dir>/data` and `<dir>/../data` for the directory of the
// binary holding SOLAR's code (the `solar` executable, or the Python extension module) and of the
// running executable; the source tree's data/ (compile-time SOLAR_DATA_DIR). Throws UserError
// naming the places tried when none has a `hardware` folder.
std::string data_dir();

// Loads a built-in device by exact name. An unknown name is a UserError listing the valid names
// with a did-you-mean suggestion.
Device load_builtin_device(const std::string& name);

// A built-in name, or a path to a device file (ending in .yaml or .yml).
Device resolve_device(const std::string& spec);

// Applies `KEY=VALUE` (a key of override_keys(), a positive finite number) to `d`. The figure gets
// the source kOverrideSource. Setting a rate the device lacks adds it; setting a memory level's
// capacity adds the level. Throws UserError for an unknown key (listing the valid ones), a bad
// value, or a bandwidth on a level that does not exist.
void apply_override(Device& d, std::string_view assignment);

// The device as JSON (docs/devices.md): numbers at their paths, sources in a `sources` object keyed
// by path. Keys sorted; absent figures omitted. Same device, same bytes.
nlohmann::json device_to_json(const Device& d);

}  // namespace solar::hw
