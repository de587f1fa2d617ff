package viz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/sweep"
)

// chromium returns the path of a headless-capable Chromium, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// runChromium loads url in a fresh headless Chromium with extra flags and
// returns its stdout and stderr.
func runChromium(t *testing.T, bin, url string, extra ...string) (stdout, stderr string) {
	t.Helper()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0",
		"--window-size=1400,3000", "--virtual-time-budget=10000",
	}
	args = append(append(args, extra...), url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, errb.String())
	}
	return out.String(), errb.String()
}

// browserOrSkip returns the path of Chromium, or skips the test when there
// is none, unless XDSSIM_BROWSER_TEST=required (.ci/run sets it after
// installing Chromium).
func browserOrSkip(t *testing.T) string {
	t.Helper()
	bin := chromium()
	if bin == "" {
		if os.Getenv("XDSSIM_BROWSER_TEST") == "required" {
			t.Fatal("no chromium on PATH, and XDSSIM_BROWSER_TEST=required")
		}
		t.Skip("no chromium on PATH (apt-get install chromium)")
	}
	return bin
}

// TestReportRendersInABrowser loads a library scenario's report from
// file:// in headless Chromium and checks that it rendered: no script or
// console error, and a canvas of non-zero size in every chart container.
// It leaves a screenshot in the test's temp directory (-v prints where).
// Without Chromium it is skipped, unless XDSSIM_BROWSER_TEST=required
// (.ci/run sets it after installing Chromium).
func TestReportRendersInABrowser(t *testing.T) {
	bin := browserOrSkip(t)
	res, exp := libraryRun(t)
	page := render(t, res, exp...)
	checkRendersInBrowser(t, bin, "report.html", page)
}

// checkRendersInBrowser writes page to a file named name, loads it from
// file:// in headless Chromium and checks that it rendered: no script or
// console error, and a canvas of non-zero size in each of the page's chart
// containers. It leaves a screenshot beside the page (-v prints where).
func checkRendersInBrowser(t *testing.T, bin, name, page string) {
	t.Helper()
	checkPageInBrowser(t, bin, name, page, true)
}

// checkPageInBrowser is checkRendersInBrowser, leaving a screenshot only
// when shot is set.
func checkPageInBrowser(t *testing.T, bin, name, page string, shot bool) {
	t.Helper()
	want := len(pageCharts(t, page))
	if want == 0 {
		t.Fatalf("%s has no chart", name)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + path

	probed := filepath.Join(dir, "probed-"+name)
	if err := os.WriteFile(probed, []byte(withProbe(page)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, logs := runChromium(t, bin, "file://"+probed, "--dump-dom")
	if i := strings.Index(dom, `id="report-errors"`); i >= 0 {
		t.Errorf("the page reported errors: %.500s", dom[i:])
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "CONSOLE") && (strings.Contains(line, "Uncaught") || strings.Contains(line, "rror")) {
			t.Errorf("console: %s", line)
		}
	}

	// Every chart container (<div class="chart" id=...>) holds the canvas
	// echarts drew, with a non-zero width and height.
	items := regexp.MustCompile(`<div class="chart" id="([^"]+)"`).FindAllStringSubmatchIndex(dom, -1)
	if len(items) != want {
		t.Errorf("%d chart containers in the rendered page, want %d", len(items), want)
	}
	canvas := regexp.MustCompile(`<canvas[^>]*\bwidth="(\d+)"[^>]*\bheight="(\d+)"`)
	for i, m := range items {
		id := dom[m[2]:m[3]]
		end := len(dom)
		if i+1 < len(items) {
			end = items[i+1][0]
		}
		c := canvas.FindStringSubmatch(dom[m[1]:end])
		if c == nil {
			t.Errorf("chart %s: no canvas", id)
			continue
		}
		w, _ := strconv.Atoi(c[1])
		h, _ := strconv.Atoi(c[2])
		if w == 0 || h == 0 {
			t.Errorf("chart %s: canvas %dx%d", id, w, h)
		}
	}

	checkLayout(t, name, dom)
	if !shot {
		return
	}
	png := strings.TrimSuffix(path, ".html") + ".png"
	runChromium(t, bin, url, "--screenshot="+png)
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", png, err)
	}
	t.Logf("screenshot: %s", png)
}

// layoutProbe runs in the page after its charts are set and writes what
// each drew into a <pre id="layout-check">, for checkLayout: every value
// y axis's extent against the largest value its series draw (stacked
// values stacked), and whether the chart's title is cut.
const layoutProbe = `<script>
(function () {
  var out = [];
  document.querySelectorAll("div.chart").forEach(function (el) {
    var c = echarts.getInstanceByDom(el), res = { id: el.id, axes: [] };
    if (!c) { res.err = "no echarts instance"; out.push(res); return; }
    var m = c.getModel();
    m.eachComponent("yAxis", function (ax, idx) {
      if (ax.get("type") === "category") { return; }
      var ext = ax.axis.scale.getExtent(), top = -Infinity;
      m.eachSeries(function (s) {
        if ((s.get("yAxisIndex") || 0) !== idx || !s.coordinateSystem || s.coordinateSystem.type !== "cartesian2d") { return; }
        var d = s.getData(), dim = d.getCalculationInfo("stackResultDimension") || d.mapDimension("y");
        if (!dim) { return; }
        var e = d.getDataExtent(dim);
        if (isFinite(e[1])) { top = Math.max(top, e[1]); }
      });
      res.axes.push({ max: ext[1], data: top });
    });
    var h = document.getElementById(el.id + "-title");
    if (h) { res.cut = h.scrollWidth > h.clientWidth + 1 || h.scrollHeight > h.clientHeight + 1; }
    out.push(res);
  });
  var pre = document.createElement("pre");
  pre.id = "layout-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

// withProbe returns page with layoutProbe before its </body>.
func withProbe(page string) string {
	i := strings.LastIndex(page, "</body>")
	if i < 0 {
		return page + layoutProbe
	}
	return page[:i] + layoutProbe + page[i:]
}

// checkLayout reads layoutProbe's findings from a rendered page: no y
// axis spans more than 1.5 times the largest value drawn on it (a share
// may cap at 100 %), no chart is drawn whose values are all zero, and no
// chart title is cut.
func checkLayout(t *testing.T, name, dom string) {
	t.Helper()
	m := regexp.MustCompile(`(?s)<pre id="layout-check">(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Errorf("%s: the layout probe did not run", name)
		return
	}
	var charts []struct {
		ID   string
		Err  string
		Cut  bool
		Axes []struct{ Max, Data float64 }
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &charts); err != nil {
		t.Fatalf("%s: layout probe: %v", name, err)
	}
	for _, c := range charts {
		if c.Err != "" {
			t.Errorf("%s: chart %s: %s", name, c.ID, c.Err)
		}
		if c.Cut {
			t.Errorf("%s: chart %s: its title is cut", name, c.ID)
		}
		for i, a := range c.Axes {
			switch {
			case a.Data <= 0 && i == 0:
				t.Errorf("%s: chart %s is drawn full size though every value on its axis is zero", name, c.ID)
			case a.Data > 0 && a.Max > 1.5*a.Data && a.Max != 100:
				t.Errorf("%s: chart %s: y axis %d spans to %v for data up to %v (over 1.5 times)", name, c.ID, i, a.Max, a.Data)
			}
		}
	}
}

// TestLibraryPagesRenderInABrowser renders every library scenario's
// report.html, a sweep.html (its fleet's size as a condition, two values
// by two seeds) and a compare.html (that size against twice it), each at
// a tenth of the scenario's fleet, and checks each in headless Chromium as
// checkRendersInBrowser does: no script error, every chart drawn, no y
// axis over 1.5 times its data, no all-zero chart drawn, no title cut.
func TestLibraryPagesRenderInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("every library scenario, three pages each")
	}
	bin := browserOrSkip(t)
	for _, e := range scenarios.Library() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			src, err := scenarios.Open(e.Name)
			if err != nil {
				t.Fatal(err)
			}
			base, err := scenarios.Parse(src, nil)
			if err != nil {
				t.Fatal(err)
			}
			var sets []string
			n := 0
			for i, g := range base.Fleet.Groups {
				k := max(min(g.Clients, 5), (g.Clients+9)/10)
				if i == 0 {
					n = k
				}
				sets = append(sets, fmt.Sprintf("fleet.group[%d].clients=%d", i, k))
			}
			s, err := scenarios.Parse(src, sets)
			if err != nil {
				t.Fatal(err)
			}
			r, err := fleet.Run(s.FleetConfig(), fleet.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkPageInBrowser(t, bin, "report.html", render(t, r, Evaluate(r, s.Expect)...), false)

			spec := sweep.Spec{Seeds: 2, MaxSeeds: 2, Params: []sweep.Param{{Key: "fleet.group[0].clients", Values: []string{strconv.Itoa(n), strconv.Itoa(2 * n)}}}}
			plan, err := sweep.NewPlan(src, sets[1:], spec)
			if err != nil {
				t.Fatal(err)
			}
			res, err := plan.Run(sweep.Options{Build: testStamp.Build})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteSweep(&b, res); err != nil {
				t.Fatal(err)
			}
			checkPageInBrowser(t, bin, "sweep.html", b.String(), false)

			c, err := sweep.Compare(sweep.Variant{Name: "A", Src: src, Sets: sets},
				sweep.Variant{Name: "B", Src: src, Sets: append(sets, fmt.Sprintf("fleet.group[0].clients=%d", 2*n))},
				[]uint64{1, 2}, nil, sweep.Options{Build: testStamp.Build})
			if err != nil {
				t.Fatal(err)
			}
			b.Reset()
			if err := WriteCompare(&b, c); err != nil {
				t.Fatal(err)
			}
			if len(pageCharts(t, b.String())) > 0 {
				checkPageInBrowser(t, bin, "compare.html", b.String(), false)
			}
		})
	}
}
