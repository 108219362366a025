"""Opens a weft-plot chart as the XML it is and reports what a reader
would see: its size, then per panel the metric, the y-axis tick labels,
whether both axes have length, and per line its number of points, whether
they lie inside the axes, and the step of its highest point.

usage: check_svg.py CHART.svg
"""
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
print("size", root.get("width"), "x", root.get("height"))
for panel in root.iter(NS + "g"):
    if panel.get("class") != "panel":
        continue
    metric = panel.get("data-metric")
    title = [t.text for t in panel.iter(NS + "text") if t.get("class") == "title"]
    ticks = [t.text for t in panel.iter(NS + "text") if t.get("class") == "tick y"]
    axes = {}
    for line in panel.iter(NS + "line"):
        if line.get("class", "").startswith("axis"):
            x1, y1, x2, y2 = (float(line.get(k)) for k in ("x1", "y1", "x2", "y2"))
            axes[line.get("class")] = (x1, y1, x2, y2, abs(x2 - x1) + abs(y2 - y1) > 0)
    left, bottom, right, _, _ = axes["axis x"]
    _, _, _, top, _ = axes["axis y"]
    print("panel", metric, "title", title, "y ticks", ticks,
          "axes", sorted(k for k, v in axes.items() if v[4]))
    for series in panel.iter(NS + "polyline"):
        points = [tuple(map(float, p.split(","))) for p in series.get("points").split()]
        inside = all(left <= x <= right and top <= y <= bottom for x, y in points)
        # Steps are evenly spaced from the first to the last x.
        highest = min(range(len(points)), key=lambda i: points[i][1])
        print("  line", series.get("data-run").split("/")[-1], "points", len(points),
              "inside", inside, "highest at point", highest + 1)
