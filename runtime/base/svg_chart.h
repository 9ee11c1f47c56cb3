//===- svg_chart.h - small x/y charts written as SVG ------------*- C++ -*-===//
//
// Part of strata. The plots the tools write (strata-bench-serve's sweep,
// strata-bench's roofline and decode time per batch size) are x/y charts:
// series of points, joined or not, each point optionally labelled, on
// linear or log axes with a grid, a title and a legend. chartSvg writes one
// as a self-contained SVG file (no scripts, no external fonts), so the docs
// can embed it and a browser shows it.
//
// Elements: each series' line is one <polyline>, each point one <circle>;
// the legend uses <rect> and <line> only (tests count circles and lines).
//
// Thread-safety: plain functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BASE_SVG_CHART_H
#define STRATA_RUNTIME_BASE_SVG_CHART_H

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::runtime {

struct ChartAxis {
  std::string label;
  /// Log scale (decades); points with a non-positive value are left out.
  bool log = false;
};

struct ChartSeries {
  /// Legend entry; empty: not in the legend.
  std::string name;
  /// Any SVG color. Default: the chart picks one by index.
  std::string color;
  std::vector<std::pair<double, double>> points;
  /// One label per point drawn beside it, or empty.
  std::vector<std::string> labels;
  /// Join the points in order (a polyline) and/or mark each (a circle).
  bool line = true;
  bool markers = true;
  bool dashed = false;
};

struct Chart {
  std::string title;
  ChartAxis x, y;
  std::vector<ChartSeries> series;
  /// Lines under the plot, e.g. what was left out and why.
  std::vector<std::string> notes;
  double width = 720, height = 480;
  /// Id of the plot's clip path; distinct per chart of one document.
  std::string id = "plot";
};

/// Charts stacked top to bottom in one SVG document.
std::string stackedChartsSvg(const std::vector<Chart> &charts);

/// The chart as an SVG document.
std::string chartSvg(const Chart &chart);

/// `text` with <, > and & escaped for SVG text.
std::string escapeXml(std::string_view text);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BASE_SVG_CHART_H
