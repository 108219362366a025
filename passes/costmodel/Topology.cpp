//===- Topology.cpp - the cluster a plan is made for ----------------------===//
//
// JSON form (all keys required unless marked):
//
//   {"name": "dgx-h100",                  (optional)
//    "nodes": 4, "devices_per_node": 8,
//    "device": {"name": "H100-SXM5-80GB", (optional)
//               "memory_gb": 80, "memory_bandwidth_gbps": 3350,
//               "peak_tflops": {"bf16": 989, "fp8": 1979, "f32": 67},
//               "efficiency": {"attention": 0.6,   (optional, each in
//                              "attention_backward": 0.5}, (0, 1])
//               "transcendentals_per_s": 1e11,     (optional)
//               "gemm_efficiency": {"max": 0.72,   (optional; max in (0, 1],
//                                   "half_gflop": 1}, half_gflop > 0)
//               "runtime_reserve_gb": 1.07},       (optional; default 1 GiB,
//                                                   0 allowed)
//    "intra_node": {"bandwidth_gbps": 450, "latency_us": 2},
//    "inter_node": {"bandwidth_gbps": 50, "latency_us": 5}}
//
// Units: memory in GB (1e9 bytes), FLOP/s in TFLOP/s (dense, no sparsity),
// link bandwidth in GB/s per device and direction, memory bandwidth in GB/s,
// latency in microseconds.
// Unknown keys are errors, so a typo cannot silently fall back to a default.
// Numbers lie in [1e-12, 1e18], memory_gb in [1e-9, 9e9] (whole bytes in an
// int64): beyond them the values in bytes, FLOP/s and seconds leave a double.
//
//===----------------------------------------------------------------------===//

#include "passes/costmodel/Topology.h"

#include "runtime/support/Files.h"
#include "runtime/support/Json.h"

#include "absl/strings/str_cat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

namespace weft {
namespace {

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// The range of a topology file's numbers in its units (GB/s, TFLOP/s,
/// microseconds): far beyond any machine either way, and narrow enough that
/// the values in bytes, FLOP/s and seconds, and the times the cost model
/// computes from them, stay finite and above zero.
constexpr double kMinNumber = 1e-12, kMaxNumber = 1e18;
/// memory_gb is held in int64 bytes: at least one, at most 9e18.
constexpr double kMinMemoryGB = 1e-9, kMaxMemoryGB = 9e9;

/// Reads one JSON object, rejecting keys it does not know.
class ObjectReader {
public:
  ObjectReader(const json::Object &obj, std::string path, StringRef label)
      : obj(obj), path(std::move(path)), label(label) {}

  /// Fails on a key not in `known`; `what` ("dtype") makes the message
  /// list the known ones.
  Error unknownKeys(ArrayRef<StringRef> known, StringRef what = "") const {
    StringSet<> allowed;
    for (StringRef k : known)
      allowed.insert(k);
    for (const auto &entry : obj)
      if (!allowed.contains(entry.first))
        return fail(
            label + ": unknown " + (what.empty() ? "key" : what) + " '" +
            where(entry.first) + "'" +
            (what.empty() ? "" : " (known: " + join(known, ", ") + ")"));
    return Error::success();
  }

  /// A string, or "" when absent.
  Expected<std::string> optionalString(StringRef key) const {
    const json::Value *v = obj.get(key);
    if (!v)
      return std::string();
    std::optional<StringRef> s = v->getAsString();
    if (!s)
      return fail(label + ": '" + where(key) + "' must be a string");
    return s->str();
  }

  /// A positive number in [min, max] (see kMinNumber).
  Expected<double> positive(StringRef key, double min = kMinNumber,
                            double max = kMaxNumber) const {
    const json::Value *v = obj.get(key);
    if (!v)
      return fail(label + ": missing key '" + where(key) + "'");
    std::optional<double> d = v->getAsNumber();
    if (!d || !(*d > 0))
      return fail(label + ": '" + where(key) + "' must be a positive number");
    if (*d < min || *d > max)
      return fail(label + ": '" + where(key) + "' is " + absl::StrCat(*d) +
                  "; it must be at " + (*d < min ? "least " : "most ") +
                  absl::StrCat(*d < min ? min : max));
    return *d;
  }

  Expected<int64_t> positiveInt(StringRef key) const {
    const json::Value *v = obj.get(key);
    if (!v)
      return fail(label + ": missing key '" + where(key) + "'");
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i <= 0)
      return fail(label + ": '" + where(key) + "' must be a positive integer");
    return *i;
  }

  Expected<ObjectReader> object(StringRef key) const {
    const json::Value *v = obj.get(key);
    if (!v)
      return fail(label + ": missing key '" + where(key) + "'");
    const json::Object *o = v->getAsObject();
    if (!o)
      return fail(label + ": '" + where(key) + "' must be an object");
    return ObjectReader(*o, where(key), label);
  }

  const json::Object &raw() const { return obj; }
  std::string where(StringRef key) const {
    return path.empty() ? key.str() : path + "." + key.str();
  }

private:
  const json::Object &obj;
  std::string path;
  StringRef label;
};

Expected<LinkSpec> readLink(const ObjectReader &parent, StringRef key) {
  Expected<ObjectReader> link = parent.object(key);
  if (!link)
    return link.takeError();
  if (Error e = link->unknownKeys({"bandwidth_gbps", "latency_us"}))
    return std::move(e);
  Expected<double> bw = link->positive("bandwidth_gbps");
  if (!bw)
    return bw.takeError();
  Expected<double> lat = link->positive("latency_us");
  if (!lat)
    return lat.takeError();
  return LinkSpec{*bw * 1e9, *lat * 1e-6};
}

/// Datasheet figures of the presets (dense, without sparsity).
struct Preset {
  const char *name;
  const char *device;
  int64_t devicesPerNode; // 0: the preset's count is devices, one node.
  double memoryGB, memoryBandwidthGBps;
  double tflopsBf16, tflopsFp8, tflopsF32;
  LinkSpec intra, inter;
  double reserveGiB = 1; // DeviceSpec::runtimeReserveBytes.
  /// DeviceSpec::gemmEfficiency and gemmHalfFlops (GFLOP): the share of
  /// the bf16 peak cuBLAS's large GEMMs reach on the part (A100 about 80%,
  /// 250 of 312 TFLOP/s; H100 SXM about 72%, 700-750 of 989), and the GEMM
  /// size at which half of it is reached (a few microseconds of work).
  double gemmMax = 1, gemmHalfGflop = 0;
};
const Preset kPresets[] = {
    // NVIDIA A100 SXM4 80GB: 312 TFLOP/s bf16, 19.5 f32, 2039 GB/s HBM2e;
    // NVLink 3 600 GB/s both directions; one 200 Gb/s HDR InfiniBand port
    // per GPU.
    {"dgx-a100",
     "A100-SXM4-80GB",
     8,
     80,
     2039,
     312,
     0,
     19.5,
     {300e9, 2e-6},
     {25e9, 5e-6},
     1,
     0.8,
     1},
    // NVIDIA H100 SXM5 80GB: 989 bf16, 1979 fp8, 67 f32, 3350 GB/s HBM3;
    // NVLink 4 900 GB/s both directions; one 400 Gb/s NDR port per GPU.
    {"dgx-h100",
     "H100-SXM5-80GB",
     8,
     80,
     3350,
     989,
     1979,
     67,
     {450e9, 2e-6},
     {50e9, 5e-6},
     1,
     0.72,
     3},
    // NVIDIA H200 SXM 141GB: H100's compute with 141 GB of HBM3e at
    // 4800 GB/s.
    {"h200",
     "H200-SXM-141GB",
     8,
     141,
     4800,
     989,
     1979,
     67,
     {450e9, 2e-6},
     {50e9, 5e-6},
     1,
     0.72,
     3},
    // Local CPU ranks on one machine talking over loopback TCP (Gloo):
    // round figures of one core of a server CPU, until a calibration
    // measures the machine.
    {"cpu", "cpu", 0, 8, 20, 0.1, 0, 0.1, {5e9, 20e-6}, {5e9, 20e-6}, 0},
};
} // namespace

Expected<Topology> Topology::parse(StringRef text, StringRef label) {
  if (absl::Status s = runtime::checkUntrustedJson({text.data(), text.size()});
      !s.ok())
    return fail(label + ": " + std::string(s.message()));
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return fail(label + ": invalid JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return fail(label + ": a topology must be a JSON object");
  ObjectReader r(*root, "", label);
  if (Error e = r.unknownKeys({"name", "nodes", "devices_per_node", "device",
                               "intra_node", "inter_node"}))
    return std::move(e);
  Topology t;
  Expected<std::string> name = r.optionalString("name");
  if (!name)
    return name.takeError();
  t.name = *name;
  Expected<int64_t> nodes = r.positiveInt("nodes");
  if (!nodes)
    return nodes.takeError();
  Expected<int64_t> perNode = r.positiveInt("devices_per_node");
  if (!perNode)
    return perNode.takeError();
  if (*nodes > kMaxNodes || *perNode > kMaxDevicesPerNode)
    return fail(formatv("{0}: {1} nodes of {2} devices is more than a "
                        "topology may have ({3} nodes of {4})",
                        label, *nodes, *perNode, kMaxNodes,
                        kMaxDevicesPerNode));
  t.nodes = *nodes;
  t.devicesPerNode = *perNode;
  Expected<ObjectReader> device = r.object("device");
  if (!device)
    return device.takeError();
  if (Error e = device->unknownKeys({"name", "memory_gb",
                                     "memory_bandwidth_gbps", "peak_tflops",
                                     "efficiency", "transcendentals_per_s",
                                     "runtime_reserve_gb", "gemm_efficiency"}))
    return std::move(e);
  Expected<std::string> deviceName = device->optionalString("name");
  if (!deviceName)
    return deviceName.takeError();
  t.device.name = *deviceName;
  Expected<double> memory =
      device->positive("memory_gb", kMinMemoryGB, kMaxMemoryGB);
  if (!memory)
    return memory.takeError();
  t.device.memoryBytes = static_cast<int64_t>(*memory * 1e9);
  Expected<double> bandwidth = device->positive("memory_bandwidth_gbps");
  if (!bandwidth)
    return bandwidth.takeError();
  t.device.memoryBandwidth = *bandwidth * 1e9;
  Expected<ObjectReader> flops = device->object("peak_tflops");
  if (!flops)
    return flops.takeError();
  if (Error e = flops->unknownKeys(kPeakFlopTypes, "dtype"))
    return std::move(e);
  for (const auto &entry : flops->raw()) {
    Expected<double> v = flops->positive(entry.first);
    if (!v)
      return v.takeError();
    t.device.peakFlops[entry.first.str()] = *v * 1e12;
  }
  if (t.device.peakFlops.empty())
    return fail(label + ": 'device.peak_tflops' needs at least one dtype");
  if (device->raw().get("efficiency")) {
    Expected<ObjectReader> efficiency = device->object("efficiency");
    if (!efficiency)
      return efficiency.takeError();
    if (Error e = efficiency->unknownKeys(kEfficiencyKinds, "kind"))
      return std::move(e);
    for (const auto &entry : efficiency->raw()) {
      Expected<double> v = efficiency->positive(entry.first, kMinNumber, 1.0);
      if (!v)
        return v.takeError();
      t.device.efficiency[entry.first.str()] = *v;
    }
  }
  if (const json::Value *reserve = device->raw().get("runtime_reserve_gb")) {
    std::optional<double> gb = reserve->getAsNumber();
    if (!gb || !(*gb >= 0) || *gb > kMaxMemoryGB)
      return fail(label +
                  ": 'device.runtime_reserve_gb' must be a number of "
                  "GB from 0 to " +
                  absl::StrCat(kMaxMemoryGB));
    t.device.runtimeReserveBytes = static_cast<int64_t>(*gb * 1e9);
  }
  if (device->raw().get("gemm_efficiency")) {
    Expected<ObjectReader> gemm = device->object("gemm_efficiency");
    if (!gemm)
      return gemm.takeError();
    if (Error e = gemm->unknownKeys({"max", "half_gflop"}))
      return std::move(e);
    Expected<double> max = gemm->positive("max", kMinNumber, 1.0);
    if (!max)
      return max.takeError();
    Expected<double> half = gemm->positive("half_gflop");
    if (!half)
      return half.takeError();
    t.device.gemmEfficiency = *max;
    t.device.gemmHalfFlops = *half * 1e9;
  }
  if (device->raw().get("transcendentals_per_s")) {
    Expected<double> rate = device->positive("transcendentals_per_s");
    if (!rate)
      return rate.takeError();
    t.device.transcendentalsPerSecond = *rate;
  }
  Expected<LinkSpec> intra = readLink(r, "intra_node");
  if (!intra)
    return intra.takeError();
  Expected<LinkSpec> inter = readLink(r, "inter_node");
  if (!inter)
    return inter.takeError();
  t.intraNode = *intra;
  t.interNode = *inter;
  return t;
}

Expected<Topology> Topology::preset(StringRef spec) {
  auto [name, countText] = spec.split(':');
  int64_t count = 0;
  if (countText.getAsInteger(10, count) || count <= 0)
    return fail("topology preset '" + spec +
                "' needs a positive count after ':' (e.g. dgx-h100:4)");
  if (count > kMaxNodes)
    return fail(formatv("topology preset '{0}' asks for {1}, more than the "
                        "{2} a topology may have",
                        spec, count, kMaxNodes));
  for (const Preset &p : kPresets) {
    if (name != p.name)
      continue;
    // The count is local ranks: devices of one node.
    if (!p.devicesPerNode && count > kMaxDevicesPerNode)
      return fail(formatv("topology preset '{0}' asks for {1} local ranks, "
                          "more than the {2} devices a node may have",
                          spec, count, kMaxDevicesPerNode));
    Topology t;
    t.name = spec.str();
    t.nodes = p.devicesPerNode ? count : 1;
    t.devicesPerNode = p.devicesPerNode ? p.devicesPerNode : count;
    t.device.name = p.device;
    t.device.memoryBytes = static_cast<int64_t>(p.memoryGB * 1e9);
    t.device.memoryBandwidth = p.memoryBandwidthGBps * 1e9;
    t.device.peakFlops["bf16"] = p.tflopsBf16 * 1e12;
    t.device.peakFlops["f32"] = p.tflopsF32 * 1e12;
    if (p.tflopsFp8 > 0)
      t.device.peakFlops["fp8"] = p.tflopsFp8 * 1e12;
    t.intraNode = p.intra;
    t.interNode = p.inter;
    t.device.runtimeReserveBytes =
        static_cast<int64_t>(p.reserveGiB * double(int64_t(1) << 30));
    t.device.gemmEfficiency = p.gemmMax;
    t.device.gemmHalfFlops = p.gemmHalfGflop * 1e9;
    return t;
  }
  return fail("unknown topology preset '" + name +
              "' (presets: cpu:N, dgx-a100:N, dgx-h100:N, h200:N)");
}

Expected<Topology> Topology::load(StringRef specOrPath) {
  StringRef name = specOrPath.split(':').first;
  for (const Preset &p : kPresets)
    if (name == p.name)
      return preset(specOrPath);
  // A topology is a few KiB. A device or pipe (/dev/zero never ends) is
  // read up to a cap; a regular file past it is refused by its size.
  constexpr size_t kMaxTopologyBytes = size_t(16) << 20;
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(specOrPath, status)) {
    if (status.type() == llvm::sys::fs::file_type::regular_file &&
        status.getSize() > kMaxTopologyBytes)
      return fail(formatv("{0}: is {1} bytes, more than a topology file may "
                          "hold ({2})",
                          specOrPath, status.getSize(), kMaxTopologyBytes));
    if (status.type() != llvm::sys::fs::file_type::regular_file &&
        status.type() != llvm::sys::fs::file_type::directory_file) {
      absl::StatusOr<std::string> text =
          runtime::readFileAtMost(specOrPath.str(), kMaxTopologyBytes);
      if (!text.ok())
        return fail(std::string(text.status().message()));
      return parse(*text, specOrPath);
    }
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(specOrPath);
  if (!buffer)
    return fail(
        specOrPath + ": cannot read (" + buffer.getError().message() +
        "); not a preset either (cpu:N, dgx-a100:N, dgx-h100:N, h200:N)");
  return parse((*buffer)->getBuffer(), specOrPath);
}

Error Topology::checkMesh(
    ArrayRef<std::pair<std::string, int64_t>> axes) const {
  int64_t product = 1;
  for (const auto &[axis, size] : axes) {
    if (size <= 0)
      return fail(formatv(
          "mesh axis '{0}' has size {1}; sizes must be positive", axis, size));
    if (__builtin_mul_overflow(product, size, &product))
      return fail("the mesh's size overflows a 64-bit count");
  }
  if (product > worldSize())
    return fail(formatv("the mesh needs {0} devices but topology '{1}' has {2} "
                        "({3} nodes x {4})",
                        product, name, worldSize(), nodes, devicesPerNode));
  return Error::success();
}

Expected<std::vector<std::pair<std::string, int64_t>>>
parseMeshSpec(StringRef spec) {
  std::vector<std::pair<std::string, int64_t>> axes;
  SmallVector<StringRef> parts;
  spec.split(parts, ',', -1, /*KeepEmpty=*/false);
  if (parts.empty())
    return fail("empty mesh spec (expected e.g. dp=2,tp=4)");
  for (StringRef part : parts) {
    auto [name, sizeText] = part.trim().split('=');
    int64_t size = 0;
    if (name != "dp" && name != "tp" && name != "pp" && name != "ep" &&
        name != "cp")
      return fail("unknown mesh axis '" + name +
                  "' (axes: dp, tp, pp, ep, cp)");
    if (sizeText.getAsInteger(10, size) || size <= 0)
      return fail("mesh axis '" + name + "' needs a positive size, got '" +
                  sizeText + "'");
    for (const auto &[seen, unused] : axes)
      if (seen == name)
        return fail("mesh axis '" + name + "' is given twice");
    axes.push_back({name.str(), size});
  }
  return axes;
}

json::Value Topology::toJSON() const {
  json::Object flops;
  for (const auto &[dtype, value] : device.peakFlops)
    flops[dtype] = value / 1e12;
  auto link = [](const LinkSpec &l) {
    return json::Object{{"bandwidth_gbps", l.bandwidth / 1e9},
                        {"latency_us", l.latency * 1e6}};
  };
  json::Object deviceJson{
      {"name", device.name},
      {"memory_gb", device.memoryBytes / 1e9},
      {"memory_bandwidth_gbps", device.memoryBandwidth / 1e9},
      {"peak_tflops", std::move(flops)}};
  if (!device.efficiency.empty()) {
    json::Object efficiency;
    for (const auto &[kind, share] : device.efficiency)
      efficiency[kind] = share;
    deviceJson["efficiency"] = std::move(efficiency);
  }
  if (device.transcendentalsPerSecond > 0)
    deviceJson["transcendentals_per_s"] = device.transcendentalsPerSecond;
  deviceJson["runtime_reserve_gb"] = device.runtimeReserveBytes / 1e9;
  if (device.gemmHalfFlops > 0)
    deviceJson["gemm_efficiency"] =
        json::Object{{"max", device.gemmEfficiency},
                     {"half_gflop", device.gemmHalfFlops / 1e9}};
  return json::Object{{"name", name},
                      {"nodes", nodes},
                      {"devices_per_node", devicesPerNode},
                      {"device", std::move(deviceJson)},
                      {"intra_node", link(intraNode)},
                      {"inter_node", link(interNode)}};
}

} // namespace weft
