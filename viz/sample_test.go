package viz

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var sampleDir = flag.String("sample-dir", "", "write report.html and summary.json of the test fixture into this directory, to look at")

// TestRenderSample writes the fixture's outputs for a person to open in a
// browser: go test ./viz/ -run TestRenderSample -sample-dir /tmp/viz-sample
func TestRenderSample(t *testing.T) {
	if *sampleDir == "" {
		t.Skip("no -sample-dir")
	}
	r := fixture(4, 600)
	if err := os.MkdirAll(*sampleDir, 0o755); err != nil {
		t.Fatal(err)
	}
	report, err := report(r, testStamp, nil)
	if err != nil {
		t.Fatal(err)
	}
	summary, err := Summary(r, testStamp)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"report.html": report, "summary.json": summary} {
		if err := os.WriteFile(filepath.Join(*sampleDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %s (%d bytes)", filepath.Join(*sampleDir, "report.html"), len(report))
}
