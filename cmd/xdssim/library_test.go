package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdssim/xdssim/scenarios"
)

// TestLibraryScenariosMeetTheirExpectations runs every library scenario
// and checks that it carries expectations and that they hold: the
// library's stories are what the simulator really does.
func TestLibraryScenariosMeetTheirExpectations(t *testing.T) {
	for _, e := range scenarios.Library() {
		t.Run(e.Name, func(t *testing.T) {
			if testing.Short() && e.Name == "cp-restart" {
				t.Skip("the largest scenario")
			}
			code, stdout, stderr := runMain(t, "run", e.Name, "--quiet", "--out", filepath.Join(t.TempDir(), e.Name))
			if code != 0 {
				t.Fatalf("xdssim run %s exited %d\nstdout:\n%s\nstderr:\n%s", e.Name, code, stdout, stderr)
			}
			if !strings.Contains(stdout, "expectations: 0 of") {
				t.Errorf("xdssim run %s printed no expectations table:\n%s", e.Name, stdout)
			}
		})
	}
}
