package viz

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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

	dom, logs := runChromium(t, bin, url, "--dump-dom")
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

	shot := strings.TrimSuffix(path, ".html") + ".png"
	runChromium(t, bin, url, "--screenshot="+shot)
	if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}
