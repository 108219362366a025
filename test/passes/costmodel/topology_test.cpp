//===- topology_test.cpp - topology files, presets and meshes -------------===//

#include "passes/costmodel/Topology.h"

#include <gtest/gtest.h>

using namespace weft;

namespace {
std::string error(llvm::Expected<Topology> t) {
  EXPECT_FALSE(static_cast<bool>(t));
  return t ? "" : llvm::toString(t.takeError());
}

const char *kValid = R"({
  "name": "lab", "nodes": 2, "devices_per_node": 4,
  "device": {"name": "X", "memory_gb": 40, "memory_bandwidth_gbps": 1500, "peak_tflops": {"bf16": 100, "f32": 20}},
  "intra_node": {"bandwidth_gbps": 200, "latency_us": 3},
  "inter_node": {"bandwidth_gbps": 25, "latency_us": 8}})";
} // namespace

TEST(Topology, ParsesTheDocumentedFormInSIUnits) {
  auto t = Topology::parse(kValid, "lab.json");
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->worldSize(), 8);
  EXPECT_EQ(t->device.memoryBytes, 40'000'000'000);
  EXPECT_DOUBLE_EQ(t->device.peakFlops.at("bf16"), 100e12);
  EXPECT_DOUBLE_EQ(t->device.memoryBandwidth, 1500e9);
  EXPECT_DOUBLE_EQ(t->intraNode.bandwidth, 200e9);
  EXPECT_DOUBLE_EQ(t->interNode.latency, 8e-6);
  // The JSON form round-trips.
  std::string text;
  llvm::raw_string_ostream(text) << t->toJSON();
  auto again = Topology::parse(text, "again");
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_EQ(again->worldSize(), 8);
  EXPECT_DOUBLE_EQ(again->interNode.bandwidth, 25e9);
  EXPECT_DOUBLE_EQ(again->device.memoryBandwidth, 1500e9);
}

TEST(Topology, PresetsCarryDatasheetFigures) {
  auto h100 = Topology::preset("dgx-h100:4");
  ASSERT_TRUE(static_cast<bool>(h100));
  EXPECT_EQ(h100->worldSize(), 32);
  EXPECT_EQ(h100->devicesPerNode, 8);
  EXPECT_DOUBLE_EQ(h100->device.peakFlops.at("bf16"), 989e12);
  EXPECT_DOUBLE_EQ(h100->device.peakFlops.at("fp8"), 1979e12);
  EXPECT_EQ(h100->device.memoryBytes, 80'000'000'000);
  auto h200 = Topology::preset("h200:1");
  ASSERT_TRUE(static_cast<bool>(h200));
  EXPECT_EQ(h200->device.memoryBytes, 141'000'000'000);
  EXPECT_DOUBLE_EQ(h200->device.memoryBandwidth, 4800e9);
  EXPECT_DOUBLE_EQ(h100->device.memoryBandwidth, 3350e9);
  auto a100 = Topology::preset("dgx-a100:2");
  ASSERT_TRUE(static_cast<bool>(a100));
  EXPECT_DOUBLE_EQ(a100->device.peakFlops.at("bf16"), 312e12);
  EXPECT_EQ(a100->device.peakFlops.count("fp8"), 0u);
  auto cpu = Topology::load("cpu:4");
  ASSERT_TRUE(static_cast<bool>(cpu));
  EXPECT_EQ(cpu->nodes, 1);
  EXPECT_EQ(cpu->worldSize(), 4);
}

TEST(Topology, DiagnosesBadFiles) {
  EXPECT_EQ(error(Topology::parse("[1]", "t.json")),
            "t.json: a topology must be a JSON object");
  EXPECT_EQ(error(Topology::parse(
                R"({"nodes": 1, "devices_per_node": 1, "gpus": 2})", "t.json")),
            "t.json: unknown key 'gpus'");
  EXPECT_EQ(error(Topology::parse(R"({"nodes": 0, "devices_per_node": 1})",
                                  "t.json")),
            "t.json: 'nodes' must be a positive integer");
  std::string badDevice = kValid;
  badDevice.replace(badDevice.find("\"memory_gb\": 40"), 15,
                    "\"memory_gb\": -4");
  EXPECT_EQ(error(Topology::parse(badDevice, "t.json")),
            "t.json: 'device.memory_gb' must be a positive number");
  std::string noBandwidth = kValid;
  noBandwidth.replace(noBandwidth.find("\"memory_bandwidth_gbps\": 1500, "), 31,
                      "");
  EXPECT_EQ(error(Topology::parse(noBandwidth, "t.json")),
            "t.json: missing key 'device.memory_bandwidth_gbps'");
  std::string typo = kValid;
  typo.replace(typo.find("latency_us\": 3"), 10, "latency_ms");
  EXPECT_EQ(error(Topology::parse(typo, "t.json")),
            "t.json: unknown key 'intra_node.latency_ms'");
  std::string dtype = kValid;
  dtype.replace(dtype.find("\"bf16\""), 6, "\"f33\"");
  EXPECT_EQ(error(Topology::parse(dtype, "t.json")),
            "t.json: unknown dtype 'device.peak_tflops.f33' (known: bf16, "
            "f32, f64, fp8)");
  std::string name = kValid;
  name.replace(name.find("\"name\": \"lab\""), 13, "\"name\": 7");
  EXPECT_EQ(error(Topology::parse(name, "t.json")),
            "t.json: 'name' must be a string");
  std::string deviceName = kValid;
  deviceName.replace(deviceName.find("\"name\": \"X\""), 11,
                     "\"name\": [\"X\"]");
  EXPECT_EQ(error(Topology::parse(deviceName, "t.json")),
            "t.json: 'device.name' must be a string");
  EXPECT_EQ(
      error(Topology::preset("dgx-h100:0")),
      "topology preset 'dgx-h100:0' needs a positive count after ':' (e.g. "
      "dgx-h100:4)");
  EXPECT_EQ(
      error(Topology::preset("tpu:4")),
      "unknown topology preset 'tpu' (presets: cpu:N, dgx-a100:N, dgx-h100:N, "
      "h200:N)");
}

// A measured profile (bench/calibrate.sh): efficiencies per kind in
// (0, 1] and a transcendental rate, read back through toJSON.
TEST(Topology, ReadsAMeasuredProfile) {
  std::string profile = kValid;
  profile.replace(profile.find("\"peak_tflops\""), 0,
                  "\"efficiency\": {\"attention\": 0.3, \"norm\": 0.125}, "
                  "\"transcendentals_per_s\": 1e8, ");
  auto t = Topology::parse(profile, "cpu.json");
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_DOUBLE_EQ(t->device.efficiency.at("attention"), 0.3);
  EXPECT_DOUBLE_EQ(t->device.efficiency.at("norm"), 0.125);
  EXPECT_DOUBLE_EQ(t->device.transcendentalsPerSecond, 1e8);
  // Not given: a GPU's 1 GiB; the cpu preset keeps none.
  EXPECT_EQ(t->device.runtimeReserveBytes, int64_t(1) << 30);
  EXPECT_EQ(Topology::preset("cpu:2")->device.runtimeReserveBytes, 0);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(t->toJSON());
  auto again = Topology::parse(text, "again.json");
  ASSERT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(again->device.efficiency, t->device.efficiency);
  EXPECT_DOUBLE_EQ(again->device.transcendentalsPerSecond, 1e8);
  EXPECT_EQ(again->device.runtimeReserveBytes, int64_t(1) << 30);

  auto with = [&](const std::string &fields) {
    std::string p = kValid;
    p.replace(p.find("\"peak_tflops\""), 0, fields + ", ");
    return error(Topology::parse(p, "cpu.json"));
  };
  EXPECT_EQ(with("\"efficiency\": {\"attention\": 1.5}"),
            "cpu.json: 'device.efficiency.attention' is 1.5; it must be at "
            "most 1");
  EXPECT_EQ(with("\"efficiency\": {\"gemm\": 0.5}"),
            "cpu.json: unknown kind 'device.efficiency.gemm' (known: "
            "attention, attention_backward, reduce, norm)");
  EXPECT_EQ(with("\"runtime_reserve_gb\": -1"),
            "cpu.json: 'device.runtime_reserve_gb' must be a number of GB "
            "from 0 to 9e+09");
  EXPECT_EQ(with("\"transcendentals_per_s\": 0"),
            "cpu.json: 'device.transcendentals_per_s' must be a positive "
            "number");
  EXPECT_EQ(with("\"gemm_efficiency\": {\"max\": 1.2, \"half_gflop\": 1}"),
            "cpu.json: 'device.gemm_efficiency.max' is 1.2; it must be at "
            "most 1");
  EXPECT_EQ(with("\"gemm_efficiency\": {\"max\": 0.7}"),
            "cpu.json: missing key 'device.gemm_efficiency.half_gflop'");
}

// A GEMM efficiency curve (the GPU presets have one) reads back through
// toJSON.
TEST(Topology, ReadsAGemmEfficiencyCurve) {
  std::string profile = kValid;
  profile.replace(profile.find("\"peak_tflops\""), 0,
                  "\"gemm_efficiency\": {\"max\": 0.7, \"half_gflop\": 2}, ");
  auto t = Topology::parse(profile, "gpu.json");
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_DOUBLE_EQ(t->device.gemmEfficiency, 0.7);
  EXPECT_DOUBLE_EQ(t->device.gemmHalfFlops, 2e9);
  EXPECT_DOUBLE_EQ(t->device.gemmShare(2e9), 0.35);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(t->toJSON());
  auto again = Topology::parse(text, "again.json");
  ASSERT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
  EXPECT_DOUBLE_EQ(again->device.gemmHalfFlops, 2e9);
  auto h100 = Topology::preset("dgx-h100:1");
  EXPECT_DOUBLE_EQ(h100->device.gemmEfficiency, 0.72);
}

TEST(Topology, MeshesMustFit) {
  auto t = Topology::preset("dgx-h100:4");
  ASSERT_TRUE(static_cast<bool>(t));
  auto mesh = parseMeshSpec("dp=4,tp=8");
  ASSERT_TRUE(static_cast<bool>(mesh));
  EXPECT_FALSE(static_cast<bool>(t->checkMesh(*mesh)));
  auto big = parseMeshSpec("dp=8,tp=8");
  ASSERT_TRUE(static_cast<bool>(big));
  EXPECT_EQ(llvm::toString(t->checkMesh(*big)),
            "the mesh needs 64 devices but topology 'dgx-h100:4' has 32 (4 "
            "nodes x 8)");
  auto unknown = parseMeshSpec("dp=2,xp=2");
  ASSERT_FALSE(static_cast<bool>(unknown));
  EXPECT_EQ(llvm::toString(unknown.takeError()),
            "unknown mesh axis 'xp' (axes: dp, tp, pp, ep, cp)");
  auto twice = parseMeshSpec("dp=2,dp=2");
  ASSERT_FALSE(static_cast<bool>(twice));
  EXPECT_EQ(llvm::toString(twice.takeError()), "mesh axis 'dp' is given twice");
  auto zero = parseMeshSpec("tp=0");
  ASSERT_FALSE(static_cast<bool>(zero));
  EXPECT_EQ(llvm::toString(zero.takeError()),
            "mesh axis 'tp' needs a positive size, got '0'");
}
