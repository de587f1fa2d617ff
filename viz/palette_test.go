package viz

import (
	"testing"

	"github.com/xdssim/xdssim/model/dataplane"
)

// TestEveryCauseHasItsOwnColour: a cause added to dataplane without a
// colour, or with another's, would make two causes look alike in every
// chart and table of the report.
func TestEveryCauseHasItsOwnColour(t *testing.T) {
	seen := map[string]string{}
	for _, other := range []string{colorUp, colorFallback, colorNotRunning} {
		seen[other] = "a state that is not a failure"
	}
	for c := dataplane.Cause(0); c < dataplane.NumCauses; c++ {
		col := causeColor(c)
		if col == "" {
			t.Errorf("%v has no colour", c)
			continue
		}
		if o, dup := seen[col]; dup {
			t.Errorf("%v has the colour %s of %s", c, col, o)
		}
		seen[col] = c.String()
	}
}
