//===- Explain.cpp - a plan as one self-contained HTML page ---------------===//

#include "passes/costmodel/Explain.h"

#include "passes/costmodel/CostModel.h"

#include "dialects/sched/IR/SchedOps.h"
#include "runtime/support/Markup.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace weft {
namespace {
std::string esc(llvm::StringRef text) {
  return runtime::escapeMarkup(std::string_view(text.data(), text.size()));
}

std::string bytesText(double bytes) {
  if (bytes >= double(int64_t(1) << 30))
    return llvm::formatv("{0:f2} GiB", bytes / double(int64_t(1) << 30));
  return llvm::formatv("{0:f1} MiB", bytes / double(1 << 20));
}

constexpr const char *kColors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                   "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"};

/// The predicted step: each rank group's runs of the `train` schedule,
/// the slowest group's total (over one minus a pipeline's simulated
/// bubble), and rank 0's time and link bytes by kind.
struct Step {
  double seconds = 0;
  std::map<std::string, double> byCategory;
  struct Comm {
    std::string link;
    double bytes = 0, seconds = 0;
  };
  std::map<std::string, Comm> comm;
};

llvm::Expected<Step> predictStep(const ExplainInput &in) {
  ModuleOp module = in.lowered;
  std::map<std::string, ProgramEstimate> programs;
  for (auto program : module.getOps<sched::ProgramOp>()) {
    FailureOr<ProgramEstimate> e = estimateProgram(program, *in.topology);
    if (failed(e))
      return llvm::createStringError("cannot estimate program '" +
                                     program.getSymName().str() + "'");
    programs[program.getSymName().str()] = std::move(*e);
  }
  auto schedule = module.lookupSymbol<sched::ScheduleOp>("train");
  if (!schedule)
    return llvm::createStringError("the module has no train schedule");
  Step step;
  bool first = true;
  for (auto sequence : schedule.getBody().getOps<sched::SequenceOp>()) {
    double busy = 0;
    for (auto run : sequence.getBody().getOps<sched::RunOp>()) {
      const ProgramEstimate &e = programs[run.getProgram().str()];
      busy += e.seconds;
      if (!first)
        continue;
      for (const ProgramEstimate::Row &row : e.rows) {
        step.byCategory[row.category] += row.seconds;
        if (row.linkBytes > 0) {
          Step::Comm &c = step.comm[row.category];
          c.link = row.link;
          c.bytes += row.linkBytes;
          c.seconds += row.seconds;
        }
      }
    }
    first = false;
    step.seconds = std::max(step.seconds, busy);
  }
  if (in.placement.pipeline)
    step.seconds /=
        std::max(0.01, 1.0 - in.placement.pipeline->simulatedBubble);
  return step;
}

/// The mesh's axes and sizes (none: one rank).
std::pair<std::vector<std::string>, std::vector<int64_t>>
meshOf(ModuleOp module) {
  std::pair<std::vector<std::string>, std::vector<int64_t>> out;
  for (auto mesh : module.getOps<sched::MeshOp>()) {
    for (llvm::StringRef axis : mesh.getAxes().getAsValueRange<StringAttr>())
      out.first.push_back(axis.str());
    out.second.assign(mesh.getSizes().begin(), mesh.getSizes().end());
    break;
  }
  return out;
}

/// Ranks as cells in rows of one node each, labelled with their mesh
/// coordinates and coloured by their pipeline stage (else dp replica).
std::string meshSvg(const ExplainInput &in) {
  auto [axes, sizes] = meshOf(in.lowered);
  int64_t world = 1;
  for (int64_t s : sizes)
    world *= s;
  int64_t perNode = std::max<int64_t>(1, in.topology->devicesPerNode);
  int64_t shown = std::min<int64_t>(world, 128);
  int64_t columns = std::min(perNode, shown);
  int64_t rows = (shown + perNode - 1) / perNode;
  const double w = 112, h = 46, gap = 6, left = 90;
  std::string out = llvm::formatv(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"mesh\" width=\"{0}\" "
      "height=\"{1}\" font-family=\"sans-serif\" font-size=\"11\">\n",
      left + columns * (w + gap) + 10, rows * (h + 2 * gap) + 10);
  std::string colourAxis = llvm::is_contained(axes, "pp") ? "pp" : "dp";
  for (int64_t r = 0; r < shown; ++r) {
    int64_t node = r / perNode, slot = r % perNode;
    if (slot == 0)
      out += llvm::formatv("<text x=\"4\" y=\"{0}\">node {1}</text>\n",
                           node * (h + 2 * gap) + h / 2 + 10, node);
    // Row-major coordinates, the last axis fastest.
    std::vector<std::string> coords;
    int64_t rest = r, colour = 0;
    std::vector<int64_t> c(sizes.size());
    for (size_t i = sizes.size(); i-- > 0;) {
      c[i] = rest % sizes[i];
      rest /= sizes[i];
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      coords.push_back(axes[i] + std::to_string(c[i]));
      if (axes[i] == colourAxis)
        colour = c[i];
    }
    double x = left + slot * (w + gap), y = node * (h + 2 * gap) + 5;
    out += llvm::formatv(
        "<g class=\"rank\"><rect x=\"{0}\" y=\"{1}\" width=\"{2}\" "
        "height=\"{3}\" rx=\"4\" fill=\"{4}\" fill-opacity=\"0.35\" "
        "stroke=\"#333\"/><text x=\"{5}\" y=\"{6}\">rank {7}</text><text "
        "x=\"{5}\" y=\"{8}\">{9}</text></g>\n",
        x, y, w, h, kColors[colour % std::size(kColors)], x + 6, y + 17, r,
        y + 34, esc(llvm::join(coords, " ")));
  }
  out += "</svg>\n";
  if (shown < world)
    out += llvm::formatv("<p>The first {0} of {1} ranks.</p>\n", shown, world);
  return out;
}

/// Per rank, a bar of its memory by kind against the device's.
std::string memorySvg(const ExplainInput &in) {
  const std::vector<RankEstimate> &ranks = in.placement.ranks;
  int64_t shown = std::min<int64_t>(ranks.size(), 64);
  double reserve = in.topology->device.runtimeReserveBytes;
  double device = in.topology->device.memoryBytes, most = device;
  for (int64_t i = 0; i < shown; ++i)
    most = std::max(most, ranks[i].totalBytes() + reserve);
  const double left = 70, width = 640, row = 22;
  double scale = width / (most * 1.05);
  std::string out = llvm::formatv(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"memory\" "
      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n",
      left + width + 120, shown * row + 50);
  const char *kinds[] = {"parameters", "gradients", "optimizer state",
                         "activations", "runtime reserve"};
  for (int64_t i = 0; i < shown; ++i) {
    const RankEstimate &r = ranks[i];
    double parts[] = {double(r.paramBytes), double(r.gradBytes),
                      double(r.optimizerBytes), double(r.activationBytes),
                      reserve};
    double x = left, y = i * row + 10;
    out += llvm::formatv("<g class=\"bar\"><text x=\"4\" y=\"{0}\">rank "
                         "{1}</text>",
                         y + 14, r.rank);
    for (size_t k = 0; k < std::size(parts); ++k) {
      if (parts[k] <= 0)
        continue;
      out += llvm::formatv(
          "<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
          "fill=\"{4}\"><title>{5}: {6}</title></rect>",
          x, y, parts[k] * scale, row - 6, kColors[k], kinds[k],
          bytesText(parts[k]));
      x += parts[k] * scale;
    }
    out += llvm::formatv("<text x=\"{0}\" y=\"{1}\">{2}</text></g>\n", x + 4,
                         y + 14, bytesText(r.totalBytes() + reserve));
  }
  if (device > 0)
    out += llvm::formatv(
        "<line x1=\"{0}\" y1=\"4\" x2=\"{0}\" y2=\"{1}\" stroke=\"#c00\" "
        "stroke-dasharray=\"4 3\"/><text x=\"{2}\" y=\"{3}\" "
        "fill=\"#c00\">device memory {4}</text>\n",
        left + device * scale, shown * row + 12, left + device * scale - 60,
        shown * row + 28, bytesText(device));
  double x = left;
  for (size_t k = 0; k < std::size(kinds); ++k) {
    out += llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"10\" height=\"10\" "
                         "fill=\"{2}\"/><text x=\"{3}\" y=\"{4}\">{5}</text>\n",
                         x, shown * row + 34, kColors[k], x + 14,
                         shown * row + 43, kinds[k]);
    x += 120;
  }
  return out + "</svg>\n";
}

/// The step's time by kind of instruction, largest first.
std::string timeSvg(const Step &step) {
  std::vector<std::pair<double, std::string>> rows;
  double total = 0;
  for (const auto &[category, seconds] : step.byCategory) {
    rows.push_back({seconds, category});
    total += seconds;
  }
  std::sort(rows.rbegin(), rows.rend());
  rows.resize(std::min<size_t>(rows.size(), 12));
  const double left = 190, width = 520, row = 20;
  std::string out =
      llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"time\" "
                    "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                    "font-size=\"11\">\n",
                    left + width + 140, rows.size() * row + 10);
  double most = rows.empty() ? 1 : rows.front().first;
  for (auto [i, r] : llvm::enumerate(rows)) {
    double y = i * row + 4;
    out += llvm::formatv(
        "<g class=\"bar\"><text x=\"4\" y=\"{0}\">{1}</text><rect x=\"{2}\" "
        "y=\"{3}\" width=\"{4}\" height=\"{5}\" fill=\"{6}\"/><text x=\"{7}\" "
        "y=\"{0}\">{8} ms ({9:f0}%)</text></g>\n",
        y + 13, esc(r.second), left, y, most > 0 ? r.first / most * width : 0,
        row - 5, kColors[0], left + (most > 0 ? r.first / most * width : 0) + 4,
        llvm::formatv("{0:g}", r.first * 1e3).str(),
        total > 0 ? 100 * r.first / total : 0);
  }
  return out + "</svg>\n";
}
} // namespace

llvm::Expected<std::string> explainHtml(const ExplainInput &in) {
  if (!in.topology || !in.lowered)
    return llvm::createStringError("explain needs a topology and the "
                                   "lowered programs");
  llvm::Expected<Step> step = predictStep(in);
  if (!step)
    return step.takeError();
  std::string plan = in.plan.empty() ? "one rank" : in.plan;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>Weft plan: " +
      esc(plan) + " on " + esc(in.topology->name) +
      "</title>\n<style>body{font-family:sans-serif;margin:24px;max-width:"
      "1100px}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
      "padding:3px 8px;text-align:right}th{background:#f3f3f3}td:first-child,"
      "th:first-child{text-align:left}section{margin-bottom:28px}"
      "tr.over td{color:#a00}"
      "</style></head><body>\n";
  out += "<h1>" + esc(in.model) + ": " + esc(plan) + " on " +
         esc(in.topology->name) + "</h1>\n";
  ModuleOp module = in.lowered;
  auto schedule = module.lookupSymbol<sched::ScheduleOp>("train");
  double flops = schedule ? scheduleFlops(schedule) : 0;
  int64_t world = in.topology->worldSize();
  if (auto [axes, sizes] = meshOf(in.lowered); !sizes.empty()) {
    world = 1;
    for (int64_t s : sizes)
      world *= s;
  }
  out += "<section id=\"summary\"><table>\n";
  out += llvm::formatv("<tr><th>predicted step</th><td>{0:f1} ms</td></tr>\n",
                       step->seconds * 1e3);
  if (in.tokensPerStep > 0 && step->seconds > 0)
    out += llvm::formatv("<tr><th>tokens/s</th><td>{0:f0}</td></tr>\n",
                         in.tokensPerStep / step->seconds);
  if (in.peakFlopsPerRank > 0 && step->seconds > 0 && flops > 0)
    out += llvm::formatv("<tr><th>MFU</th><td>{0:f1}%</td></tr>\n",
                         100 * flops / step->seconds / world /
                             in.peakFlopsPerRank);
  out += llvm::formatv("<tr><th>ranks</th><td>{0}</td></tr>\n", world);
  out += "</table><p>Predictions of the cost model "
         "(passes/costmodel/CostModel.h) and the memory estimate "
         "(Report.h), not measurements.</p></section>\n";
  out += "<section id=\"mesh\"><h2>Mesh on the topology</h2>\n" + meshSvg(in) +
         "</section>\n";
  out += "<section id=\"memory\"><h2>Memory per rank</h2>\n" + memorySvg(in);
  for (const RankEstimate &r : in.placement.ranks)
    if (std::string over = overMemory(r, *in.topology); !over.empty()) {
      out += "<p class=\"over\"><b>Does not fit:</b> " + esc(over) + "</p>\n";
      break;
    }
  out += "</section>\n";
  out += "<section id=\"time\"><h2>Predicted step time by kind (rank "
         "0)</h2>\n" +
         timeSvg(*step) + "</section>\n";
  out += "<section id=\"comm\"><h2>Communication per step (rank 0)</h2>\n";
  if (step->comm.empty()) {
    out += "<p>None.</p>\n";
  } else {
    std::map<std::string, double> perLink;
    out += "<table><tr><th>collective</th><th>link</th><th>sent</th>"
           "<th>time</th></tr>\n";
    for (const auto &[category, c] : step->comm) {
      perLink[c.link] += c.bytes;
      out += llvm::formatv("<tr><td>{0}</td><td>{1}</td><td>{2}</td><td>"
                           "{3:f2} ms</td></tr>\n",
                           esc(category), esc(c.link), bytesText(c.bytes),
                           c.seconds * 1e3);
    }
    out += "</table>\n<p>";
    for (const auto &[link, bytes] : perLink)
      out += esc(link) + ": " + bytesText(bytes) + " sent. ";
    out += "</p>\n";
  }
  out += "</section>\n";
  if (!in.timelineSvg.empty())
    out += "<section id=\"pipeline\"><h2>Pipeline schedule</h2>\n<div "
           "style=\"overflow-x:auto\">" +
           in.timelineSvg + "</div></section>\n";
  out += "<section id=\"alternatives\"><h2>Alternatives</h2>\n";
  if (!in.searched) {
    out += "<p>The plan was given, not searched: <code>weftc compile --plan "
           "auto</code> (or <code>weftc plan</code>) weighs it against the "
           "others.</p>\n";
  } else if (in.alternatives.empty()) {
    out += "<p>No other plan fits.</p>\n";
  } else {
    out += "<table><tr><th>plan</th><th>recompute</th><th>step</th>"
           "<th>memory (fullest rank)</th><th>why it lost</th></tr>\n";
    for (const ExplainAlternative &a : in.alternatives)
      out += llvm::formatv("<tr{0}><td>{1}</td><td>{2}</td><td>{3:f1} ms</td>"
                           "<td>{4}</td><td>{5}</td></tr>\n",
                           a.fits ? "" : " class=\"over\"", esc(a.plan),
                           esc(a.recompute), a.stepSeconds * 1e3,
                           bytesText(a.peakBytes), esc(a.why));
    out += "</table>\n";
  }
  out += "</section>\n";
  out += "</body></html>\n";
  return out;
}

} // namespace weft
