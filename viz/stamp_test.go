package viz

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/stamp"
)

// TestEveryPageNamesItsBuildAndScenario: report.html, sweep.html and
// compare.html end with a footer naming the build of xdssim that made
// their runs and the SHA-256 of each scenario run; sweep.html of shards
// merged by another build names that one too.
func TestEveryPageNamesItsBuildAndScenario(t *testing.T) {
	r, es := libraryRun(t)
	res, c := sweepFixtures(t)
	merged := *res
	mergedBy := stamp.Build{Version: "v1.2.4", Revision: testStamp.Revision, Dirty: "true", Go: "go1.26.9"}
	merged.MergedBy = &mergedBy
	build := `Made by xdssim v1.2.3, revision <code>879b914b08c1adee68d666f822139378c2cedf88</code>, dirty false, go1.26.8`
	tests := []struct {
		name string
		page func(*bytes.Buffer) error
		want []string
	}{
		{"report.html", func(b *bytes.Buffer) error { return WriteReport(b, r, testStamp, es...) },
			[]string{build + `. Scenario SHA-256 <code>` + testStamp.ScenarioSHA256 + `</code>.`}},
		{"sweep.html", func(b *bytes.Buffer) error { return WriteSweep(b, res) },
			[]string{build + `. Scenario SHA-256 <code>` + res.ScenarioSHA256 + `</code>.`}},
		{"sweep.html of merged shards", func(b *bytes.Buffer) error { return WriteSweep(b, &merged) },
			[]string{build + `; merged by xdssim v1.2.4, revision <code>879b914b08c1adee68d666f822139378c2cedf88</code>, dirty true, go1.26.9.`}},
		{"compare.html", func(b *bytes.Buffer) error { return WriteCompare(b, c) },
			[]string{build + `. Scenario A SHA-256 <code>` + c.ScenarioSHA256[0] + `</code>. Scenario B SHA-256 <code>` + c.ScenarioSHA256[1] + `</code>.`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.page(&b); err != nil {
				t.Fatal(err)
			}
			page := b.String()
			i := strings.Index(page, `<footer class="stamp muted" id="stamp">`)
			if i < 0 || !strings.HasSuffix(strings.TrimSpace(page[i:]), "</footer>\n</body>\n</html>") {
				t.Fatalf("no footer last in the body:\n%.400s", page[max(0, i):])
			}
			footer := page[i:]
			for _, w := range tt.want {
				if !strings.Contains(footer, w) {
					t.Errorf("the footer lacks %q:\n%s", w, footer)
				}
			}
		})
	}
	if c.ScenarioSHA256[0] == c.ScenarioSHA256[1] {
		t.Error("the two variants of the comparison have one scenario hash")
	}
}

// TestAnOutputWithoutAStampIsRefused: a writer given no stamp, or a
// malformed one, fails instead of writing an output that says nothing
// (or something false) of how it was made.
func TestAnOutputWithoutAStampIsRefused(t *testing.T) {
	r, _ := libraryRun(t)
	res, c := sweepFixtures(t)
	noHash := testStamp
	noHash.ScenarioSHA256 = ""
	badBuild := testStamp
	badBuild.Dirty = "yes"
	unstamped := *res
	unstamped.Build = stamp.Build{}
	unstampedCompare := *c
	unstampedCompare.ScenarioSHA256[1] = "x"
	var b bytes.Buffer
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"summary.json, no stamp", WriteSummary(&b, r, stamp.Run{}), "viz: summary.json: stamp: build.version: missing"},
		{"summary.json, no scenario hash", WriteSummary(&b, r, noHash), `viz: summary.json: stamp: scenario_sha256: expected 64 hex digits, found ""`},
		{"report.html, a bad build", WriteReport(&b, r, badBuild), `viz: report.html: stamp: build.dirty: "yes": expected true, false or unknown`},
		{"OpenMetrics, no stamp", WriteOpenMetrics(&b, r, stamp.Run{}, time.Unix(0, 0)), "viz: OpenMetrics: stamp: build.version: missing"},
		{"sweep.html, no build", WriteSweep(&b, &unstamped), "viz: sweep.html: stamp: build.version: missing"},
		{"compare.html, a bad hash of B", WriteCompare(&b, &unstampedCompare), `viz: compare.html: stamp of B: scenario_sha256: expected 64 hex digits, found "x"`},
	} {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s: error %v, want %q", tt.name, tt.err, tt.want)
		}
	}
}
