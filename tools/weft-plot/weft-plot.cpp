//===- weft-plot.cpp - a run's metrics as a chart -------------------------===//
//
//   weft-plot METRICS.jsonl... -o chart.svg [--metrics loss,grad_norm,mfu]
//             [--width 800]
//
// Draws one panel per metric, stacked, each with its step axis, value
// axis, ticks and one line per metrics file (weft-run --metrics), for
// people who would rather look than read. A metric is a key of the
// metrics lines ("loss", "mfu", "data_wait_s") or a health probe as
// "probes/<name>" ("probes/transformer.h.0/act_rms"). SVG, so any browser
// opens it and a test can read it back.
//
//===----------------------------------------------------------------------===//

#include "runtime/support/Files.h"
#include "runtime/support/Markup.h"

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

ABSL_FLAG(std::string, o, "", "The SVG file to write");
ABSL_FLAG(std::string, metrics, "",
          "Comma list of metrics, one panel each (default: loss, grad_norm, "
          "and mfu when the runs have it, else tokens_per_s)");
ABSL_FLAG(int64_t, width, 800, "Chart width in pixels (400 to 4000)");

namespace {
using json = nlohmann::json;

int fail(const std::string &message) {
  std::cerr << "weft-plot: error: " << message << "\n";
  return 1;
}

/// One metrics file: each line's object, with the step it reports.
struct Run {
  std::string path;
  std::vector<json> lines;
};

/// Reads `path`, one JSON object per non-empty line, or says which line
/// is not one.
absl::StatusOr<Run> readRun(const std::string &path) {
  absl::StatusOr<std::string> text = weft::runtime::readWholeFile(path);
  if (!text.ok())
    return text.status();
  Run run{path, {}};
  int64_t number = 0;
  std::vector<absl::string_view> lines = absl::StrSplit(*text, '\n');
  for (absl::string_view line : lines) {
    ++number;
    if (line.find_first_not_of(" \t\r") == absl::string_view::npos)
      continue;
    json value = json::parse(line, nullptr, /*allow_exceptions=*/false);
    // A last line with no newline that does not parse is one weft-run is
    // still writing (a live run): left out, not an error.
    if (value.is_discarded() && number == static_cast<int64_t>(lines.size())) {
      std::cerr << "weft-plot: " << path << ":" << number
                << ": leaving out the unfinished last line\n";
      continue;
    }
    if (value.is_discarded() || !value.is_object())
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", number,
                       ": not a JSON object (weft-run --metrics "
                       "writes one per line)"));
    if (!value.contains("step") || !value["step"].is_number())
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", number, ": no number \"step\""));
    run.lines.push_back(std::move(value));
  }
  if (run.lines.empty())
    return absl::InvalidArgumentError(absl::StrCat(path, ": no metrics lines"));
  return run;
}

/// `metric` of one line: a finite number, or nothing (absent, null, a
/// list).
std::optional<double> valueOf(const json &line, const std::string &metric) {
  const json *v = &line;
  if (metric.rfind("probes/", 0) == 0) {
    auto probes = line.find("probes");
    if (probes == line.end() || !probes->is_object())
      return std::nullopt;
    v = &*probes;
    auto it = v->find(metric.substr(7));
    if (it == v->end())
      return std::nullopt;
    v = &*it;
  } else {
    auto it = line.find(metric);
    if (it == line.end())
      return std::nullopt;
    v = &*it;
  }
  if (!v->is_number())
    return std::nullopt;
  double x = v->get<double>();
  return std::isfinite(x) ? std::optional<double>(x) : std::nullopt;
}

/// About five round tick values covering [lo, hi] (1, 2 or 5 times a
/// power of ten apart).
std::vector<double> ticks(double lo, double hi) {
  double span = hi - lo;
  double raw = span / 4, power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  // An index, not a running sum: a step below half an ulp of the values
  // (a span of 1e-17 at 0.1) would never advance one; 12 ticks at most.
  std::vector<double> out;
  double first = std::ceil(lo / step);
  for (int i = 0; i < 12; ++i) {
    double t = (first + i) * step;
    if (t > hi + step * 1e-9)
      break;
    out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return out;
}

constexpr const char *kColors[] = {"#1f77b4", "#d62728", "#2ca02c",
                                   "#ff7f0e", "#9467bd", "#8c564b"};

/// One panel at vertical offset `top`: axes, ticks, the metric's name and
/// one polyline per run.
std::string panel(const std::string &metric, const std::vector<Run> &runs,
                  double top, double width, double height) {
  const double left = 70, right = 20, above = 28, below = 36;
  double x0 = left, x1 = width - right, y0 = top + height - below,
         y1 = top + above;
  double sMin = INFINITY, sMax = -INFINITY, vMin = INFINITY, vMax = -INFINITY;
  for (const Run &run : runs)
    for (const json &line : run.lines)
      if (std::optional<double> v = valueOf(line, metric)) {
        double s = line["step"].get<double>();
        sMin = std::min(sMin, s), sMax = std::max(sMax, s);
        vMin = std::min(vMin, *v), vMax = std::max(vMax, *v);
      }
  if (sMax == sMin)
    sMin -= 1, sMax += 1;
  if (vMax == vMin) {
    double pad = std::max(std::abs(vMax) * 0.05, 1e-9);
    vMin -= pad, vMax += pad;
  }
  auto px = [&](double s) {
    return x0 + (s - sMin) / (sMax - sMin) * (x1 - x0);
  };
  auto py = [&](double v) {
    return y0 - (v - vMin) / (vMax - vMin) * (y0 - y1);
  };
  std::string out = absl::StrFormat(
      "<g class=\"panel\" data-metric=\"%s\">\n"
      "<text class=\"title\" x=\"%.1f\" y=\"%.1f\">%s</text>\n"
      "<line class=\"axis x\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
      "stroke=\"black\"/>\n"
      "<line class=\"axis y\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
      "stroke=\"black\"/>\n",
      weft::runtime::escapeMarkup(metric), x0, top + 18,
      weft::runtime::escapeMarkup(metric), x0, y0, x1, y0, x0, y0, x0, y1);
  for (double t : ticks(vMin, vMax))
    out += absl::StrFormat(
        "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"#ddd\"/>\n<text class=\"tick y\" x=\"%.1f\" y=\"%.1f\" "
        "text-anchor=\"end\">%g</text>\n",
        x0, py(t), x1, py(t), x0 - 6, py(t) + 4, t);
  for (double t : ticks(sMin, sMax))
    if (t == std::floor(t))
      out += absl::StrFormat("<text class=\"tick x\" x=\"%.1f\" y=\"%.1f\" "
                             "text-anchor=\"middle\">%g</text>\n",
                             px(t), y0 + 16, t);
  out += absl::StrFormat("<text class=\"label\" x=\"%.1f\" y=\"%.1f\" "
                         "text-anchor=\"middle\">step</text>\n",
                         (x0 + x1) / 2, y0 + 32);
  for (size_t r = 0; r < runs.size(); ++r) {
    std::vector<std::string> points;
    for (const json &line : runs[r].lines)
      if (std::optional<double> v = valueOf(line, metric))
        points.push_back(absl::StrFormat(
            "%.2f,%.2f", px(line["step"].get<double>()), py(*v)));
    if (points.empty())
      continue;
    out += absl::StrFormat(
        "<polyline class=\"series\" data-run=\"%s\" fill=\"none\" "
        "stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n",
        weft::runtime::escapeMarkup(runs[r].path),
        kColors[r % std::size(kColors)], absl::StrJoin(points, " "));
  }
  return out + "</g>\n";
}
} // namespace

int main(int argc, char **argv) {
  absl::SetProgramUsageMessage(
      "weft-plot METRICS.jsonl... -o chart.svg [--metrics loss,grad_norm,mfu] "
      "[--width 800]: draws weft-run's metrics, one panel per metric");
  std::vector<char *> args = absl::ParseCommandLine(argc, argv);
  std::vector<std::string> paths(args.begin() + 1, args.end());
  std::string output = absl::GetFlag(FLAGS_o);
  int64_t width = absl::GetFlag(FLAGS_width);
  if (paths.empty())
    return fail("no metrics file given (weft-plot METRICS.jsonl... -o "
                "chart.svg)");
  if (output.empty())
    return fail("-o chart.svg is required");
  if (width < 400 || width > 4000)
    return fail(absl::StrCat("--width ", width, " is not in [400, 4000]"));
  std::vector<Run> runs;
  for (const std::string &path : paths) {
    absl::StatusOr<Run> run = readRun(path);
    if (!run.ok())
      return fail(std::string(run.status().message()));
    runs.push_back(std::move(*run));
  }
  auto anyHas = [&](const std::string &metric) {
    for (const Run &run : runs)
      for (const json &line : run.lines)
        if (valueOf(line, metric))
          return true;
    return false;
  };
  std::vector<std::string> metrics =
      absl::StrSplit(absl::GetFlag(FLAGS_metrics), ',', absl::SkipEmpty());
  if (metrics.empty())
    metrics = {"loss", "grad_norm", anyHas("mfu") ? "mfu" : "tokens_per_s"};
  for (const std::string &metric : metrics)
    if (!anyHas(metric)) {
      std::set<std::string> known;
      for (const json &line : runs.front().lines)
        for (auto it = line.begin(); it != line.end(); ++it)
          if (it.value().is_number())
            known.insert(it.key());
          else if (it.key() == "probes" && it.value().is_object())
            for (auto p = it.value().begin(); p != it.value().end(); ++p)
              known.insert("probes/" + p.key());
      return fail(absl::StrCat("no run has a number for metric '", metric,
                               "' (", paths.front(),
                               " has: ", absl::StrJoin(known, ", "), ")"));
    }
  const double panelHeight = 240, legend = runs.size() > 1 ? 24.0 : 0.0;
  double height = panelHeight * double(metrics.size()) + legend;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
      "viewBox=\"0 0 %d %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      width, height, width, height);
  for (size_t i = 0; i < metrics.size(); ++i)
    svg += panel(metrics[i], runs, panelHeight * double(i), double(width),
                 panelHeight);
  for (size_t r = 0; legend > 0 && r < runs.size(); ++r)
    svg += absl::StrFormat(
        "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n",
        70.0 + 220.0 * double(r), height - 8, kColors[r % std::size(kColors)],
        weft::runtime::escapeMarkup(runs[r].path));
  svg += "</svg>\n";
  std::ofstream out(output, std::ios::binary);
  out << svg;
  out.close();
  if (!out)
    return fail("cannot write " + output);
  std::cout << "wrote " << output << ": " << metrics.size() << " panel"
            << (metrics.size() == 1 ? "" : "s") << " ("
            << absl::StrJoin(metrics, ", ") << "), " << runs.size() << " run"
            << (runs.size() == 1 ? "" : "s") << "\n";
  return 0;
}
