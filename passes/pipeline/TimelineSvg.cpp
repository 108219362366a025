//===- TimelineSvg.cpp - a simulated pipeline schedule as a picture -------===//
//
// Plain SVG, no script or external style, so a browser or an image viewer
// shows it as it is: one row per rank, time to the right, each entry a box
// coloured by what it computes, each message between ranks an arrow from
// the end of the entry that sends it to the start of the one that waits
// for it.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Schedule.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace weft::pipeline;

namespace {
// Geometry, in SVG user units.
constexpr double kLeft = 70, kTop = 40, kRowHeight = 34, kBoxHeight = 24,
                 kMaxWidth = 1400, kMinUnit = 12;

const char *colourOf(Phase phase) {
  switch (phase) {
  case Phase::Forward:
    return "#4e79a7"; // Blue.
  case Phase::Backward:
    return "#59a14f"; // Green.
  case Phase::WeightGrad:
    return "#f28e2b"; // Orange.
  }
  return "#999999";
}
} // namespace

std::string weft::pipeline::timelineSvg(const ScheduleTable &table,
                                        const Timeline &line) {
  // One time unit wide enough for a label, the whole at most kMaxWidth
  // unless that would squeeze the boxes below kMinUnit.
  double unit = line.makespan > 0
                    ? std::max(kMinUnit, (kMaxWidth - kLeft) / line.makespan)
                    : kMinUnit;
  double width = kLeft + line.makespan * unit + 20;
  double height = kTop + table.ranks * kRowHeight + 40;
  auto x = [&](double t) { return kLeft + t * unit; };
  auto rowY = [&](int64_t rank) { return kTop + rank * kRowHeight; };
  std::string out = llvm::formatv(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:F0}\" "
      "height=\"{1:F0}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<defs><marker id=\"arrow\" markerWidth=\"6\" markerHeight=\"6\" "
      "refX=\"5\" refY=\"3\" orient=\"auto\"><path d=\"M0,0 L6,3 L0,6 z\" "
      "fill=\"#333333\"/></marker></defs>\n"
      "<text x=\"{2:F0}\" y=\"20\" font-size=\"13\">{3}: {4} ranks, {5} "
      "micro-batches, {6} stage(s) per rank; bubble {7:F3}</text>\n",
      width, height, kLeft, scheduleName(table.kind), table.ranks,
      table.microbatches, table.chunks, line.bubbleFraction);
  for (int64_t r = 0; r < table.ranks; ++r) {
    out += llvm::formatv("<text x=\"8\" y=\"{0:F1}\">rank {1}</text>\n",
                         rowY(r) + kBoxHeight * 0.7, r);
    for (size_t e = 0; e < table.actions[r].size(); ++e) {
      const Action &a = table.actions[r][e];
      auto [start, end] = line.spans[r][e];
      out += llvm::formatv(
          "<rect x=\"{0:F1}\" y=\"{1:F1}\" width=\"{2:F1}\" height=\"{3:F0}\" "
          "fill=\"{4}\" stroke=\"#ffffff\"><title>rank {5}: {6}</title>"
          "</rect>\n"
          "<text x=\"{7:F1}\" y=\"{8:F1}\" fill=\"#ffffff\" "
          "text-anchor=\"middle\">{6}</text>\n",
          x(start), rowY(r), (end - start) * unit, kBoxHeight,
          colourOf(a.phase), r, actionName(a, table.chunks > 1),
          (x(start) + x(end)) / 2, rowY(r) + kBoxHeight * 0.7);
    }
  }
  for (const Transfer &t : line.transfers) {
    double fromX = x(line.spans[t.fromRank][t.fromEntry].second);
    double toX = x(line.spans[t.toRank][t.toEntry].first);
    bool down = t.toRank > t.fromRank;
    double fromY = rowY(t.fromRank) + (down ? kBoxHeight : 0);
    double toY = rowY(t.toRank) + (down ? 0 : kBoxHeight);
    out += llvm::formatv(
        "<line x1=\"{0:F1}\" y1=\"{1:F1}\" x2=\"{2:F1}\" y2=\"{3:F1}\" "
        "stroke=\"{4}\" stroke-width=\"1\" marker-end=\"url(#arrow)\"/>\n",
        fromX, fromY, toX, toY, t.gradient ? "#2e6b2a" : "#2b4c6f");
  }
  double legendY = kTop + table.ranks * kRowHeight + 20;
  double legendX = kLeft;
  for (auto [phase, name] :
       {std::pair{Phase::Forward, "forward (F)"},
        std::pair{Phase::Backward,
                  table.splitBackward ? "input gradient (B)" : "backward (B)"},
        std::pair{Phase::WeightGrad, "weight gradient (W)"}}) {
    if (phase == Phase::WeightGrad && !table.splitBackward)
      continue;
    out += llvm::formatv("<rect x=\"{0:F0}\" y=\"{1:F0}\" width=\"12\" "
                         "height=\"12\" fill=\"{2}\"/><text x=\"{3:F0}\" "
                         "y=\"{4:F0}\">{5}</text>\n",
                         legendX, legendY - 10, colourOf(phase), legendX + 16,
                         legendY, name);
    legendX += 150;
  }
  out += "</svg>\n";
  return out;
}
