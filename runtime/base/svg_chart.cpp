//===- svg_chart.cpp - small x/y charts written as SVG --------------------===//
//
// Part of strata. See svg_chart.h. Linear axes start at 0 and end at a
// "nice" tick above the largest value (1, 2 or 5 times a power of ten);
// log axes span whole decades around the values (ticks at 1, 2 and 5 times
// each power of ten when they span two decades at most).
//
//===----------------------------------------------------------------------===//

#include "runtime/base/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace strata::runtime {

namespace {

constexpr const char *kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                   "#bcbd22", "#17becf"};

/// "Nice" tick step for a range (1, 2 or 5 times a power of ten).
double tickStep(double range, int ticks) {
  const double raw = range / std::max(ticks, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag)
      return m * mag;
  return 10 * mag;
}

/// One axis mapped onto [0, 1] and its ticks.
struct Scale {
  bool log = false;
  double lo = 0, hi = 1; // log: exponents of ten
  std::vector<double> ticks;

  static Scale fit(const ChartAxis &axis, double min, double max) {
    Scale s;
    s.log = axis.log;
    if (axis.log) {
      if (!(min > 0) || !std::isfinite(max)) {
        min = 1;
        max = 10;
      }
      s.lo = std::floor(std::log10(min));
      s.hi = std::ceil(std::log10(max));
      if (s.hi <= s.lo)
        s.hi = s.lo + 1;
      // Short spans (two decades at most) also get 2 and 5 times each
      // power of ten.
      for (double e = s.lo; e <= s.hi + 0.5; ++e)
        for (double m : {1.0, 2.0, 5.0})
          if (m == 1 || (s.hi - s.lo <= 2 && e < s.hi))
            s.ticks.push_back(m * std::pow(10.0, e));
      return s;
    }
    double top = max > 0 ? max * 1.1 : 1;
    double step = tickStep(top, 6);
    s.lo = 0;
    s.hi = step * std::ceil(top / step);
    for (double v = 0; v <= s.hi + step / 2; v += step)
      s.ticks.push_back(v);
    return s;
  }

  bool shows(double v) const { return !log || v > 0; }

  double at(double v) const {
    return log ? (std::log10(v) - lo) / (hi - lo) : (v - lo) / (hi - lo);
  }
};

} // namespace

std::string escapeXml(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

std::string chartSvg(const Chart &chart) {
  const double width = chart.width, height = chart.height;
  const double left = 90, right = 30, top = 50;
  const double bottom = 70 + 16 * static_cast<double>(chart.notes.size());
  const double pw = width - left - right, ph = height - top - bottom;

  double xmin = std::numeric_limits<double>::infinity(), xmax = 0;
  double ymin = xmin, ymax = 0;
  for (const ChartSeries &series : chart.series)
    for (auto [x, y] : series.points) {
      if (chart.x.log ? x > 0 : std::isfinite(x)) {
        xmin = std::min(xmin, x);
        xmax = std::max(xmax, x);
      }
      if (chart.y.log ? y > 0 : std::isfinite(y)) {
        ymin = std::min(ymin, y);
        ymax = std::max(ymax, y);
      }
    }
  const Scale sx = Scale::fit(chart.x, xmin, xmax);
  const Scale sy = Scale::fit(chart.y, ymin, ymax);
  auto px = [&](double x) { return left + sx.at(x) * pw; };
  auto py = [&](double y) { return top + ph - sy.at(y) * ph; };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">{3}"
      "</text>\n",
      width, height, left + pw / 2, escapeXml(chart.title));
  // Grid, ticks and labels.
  for (double x : sx.ticks)
    s +=
        fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" "
                    "stroke=\"#ddd\"/>\n<text x=\"{0:.1f}\" y=\"{3}\" "
                    "text-anchor=\"middle\">{4:g}</text>\n",
                    px(x), top, top + ph, top + ph + 18, x);
  for (double y : sy.ticks)
    s +=
        fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" "
                    "stroke=\"#ddd\"/>\n<text x=\"{3}\" y=\"{4:.1f}\" "
                    "text-anchor=\"end\">{5:g}</text>\n",
                    left, py(y), left + pw, left - 8, py(y) + 4, y);
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                   "fill=\"none\" stroke=\"#333\"/>\n",
                   left, top, pw, ph);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   left + pw / 2, top + ph + 45, escapeXml(chart.x.label));
  s += fmt::format("<text transform=\"translate(22 {}) rotate(-90)\" "
                   "text-anchor=\"middle\">{}</text>\n",
                   top + ph / 2, escapeXml(chart.y.label));
  for (size_t i = 0; i < chart.notes.size(); ++i)
    s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#555\">{}</text>\n", left,
                     top + ph + 65 + 16 * static_cast<double>(i),
                     escapeXml(chart.notes[i]));

  // The series, each clipped to the plot area.
  s += fmt::format("<clipPath id=\"{0}\"><rect x=\"{1}\" y=\"{2}\" "
                   "width=\"{3}\" height=\"{4}\"/></clipPath>\n"
                   "<g clip-path=\"url(#{0})\">\n",
                   chart.id, left, top, pw, ph);
  std::vector<std::string> colors;
  for (size_t k = 0; k < chart.series.size(); ++k) {
    const ChartSeries &series = chart.series[k];
    std::string color = series.color.empty()
                            ? kColors[k % (sizeof kColors / sizeof *kColors)]
                            : series.color;
    colors.push_back(color);
    std::vector<size_t> shown;
    for (size_t i = 0; i < series.points.size(); ++i)
      if (sx.shows(series.points[i].first) && sy.shows(series.points[i].second))
        shown.push_back(i);
    if (series.line && shown.size() > 1) {
      std::string path;
      for (size_t i : shown)
        path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ",
                            px(series.points[i].first),
                            py(series.points[i].second));
      s += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" "
                       "stroke-width=\"2\"{}/>\n",
                       path, color,
                       series.dashed ? " stroke-dasharray=\"6 4\"" : "");
    }
    for (size_t i : shown) {
      double x = px(series.points[i].first), y = py(series.points[i].second);
      if (series.markers)
        s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" "
                         "fill=\"{}\" fill-opacity=\"0.8\"/>\n",
                         x, y, color);
      if (i < series.labels.size() && !series.labels[i].empty())
        s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\">{}"
                         "</text>\n",
                         x + 6, y - 6, escapeXml(series.labels[i]));
    }
  }
  s += "</g>\n";

  // Legend, top left inside the plot.
  double ly = top + 16;
  for (size_t k = 0; k < chart.series.size(); ++k) {
    const ChartSeries &series = chart.series[k];
    if (series.name.empty())
      continue;
    double lx = left + 12;
    if (series.markers)
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"8\" height=\"8\" "
                       "fill=\"{}\"/>\n",
                       lx + 6, ly - 8, colors[k]);
    else
      s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" "
                       "stroke=\"{}\" stroke-width=\"2\"{}/>\n",
                       lx, ly - 4, lx + 20, ly - 4, colors[k],
                       series.dashed ? " stroke-dasharray=\"6 4\"" : "");
    s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", lx + 26, ly,
                     escapeXml(series.name));
    ly += 16;
  }
  s += "</svg>\n";
  return s;
}

std::string stackedChartsSvg(const std::vector<Chart> &charts) {
  double width = 0, height = 0;
  for (const Chart &chart : charts) {
    width = std::max(width, chart.width);
    height += chart.height;
  }
  std::string s =
      fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
                  "height=\"{1}\" viewBox=\"0 0 {0} {1}\">\n",
                  width, height);
  double y = 0;
  for (const Chart &chart : charts) {
    std::string one = chartSvg(chart);
    // The chart's own <svg> element, placed at its offset.
    one.replace(0, 4, fmt::format("<svg y=\"{}\"", y));
    s += one;
    y += chart.height;
  }
  return s + "</svg>\n";
}

} // namespace strata::runtime
