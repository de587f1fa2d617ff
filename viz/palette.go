package viz

import (
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/fleet"
)

// causeColors give each root cause of a failed RPC one colour, the same in
// every chart and table of the report.
var causeColors = [dataplane.NumCauses]string{
	dataplane.NoConfigCPUnreachable:   "#d62728",
	dataplane.NoConfigResourceNotSent: "#ff9896",
	dataplane.ResourceTimerSpurious:   "#ff7f0e",
	dataplane.ResourceDoesNotExist:    "#8c564b",
	dataplane.NACK:                    "#9467bd",
	dataplane.ResourceDeleted:         "#e377c2",
	dataplane.ResourceError:           "#bcbd22",
	dataplane.NoHealthyEndpoint:       "#17becf",
	dataplane.BackendDownStaleEDS:     "#1f77b4",
	dataplane.BackendDown:             "#393b79",
	dataplane.BackendError:            "#637939",
	dataplane.Deadline:                "#7b4173",
}

// causeColor is the colour of cause c.
func causeColor(c dataplane.Cause) string {
	if c < dataplane.NumCauses {
		return causeColors[c]
	}
	return "#444444"
}

// Colours of the states that are not failures. None is grey: grey is the
// faults' shading.
const (
	colorUp         = "#e3f1e6"
	colorFallback   = "#f2c94c"
	colorNotRunning = "#c5b0d5"
	colorGood       = "#2e9d5b"
	colorWaiting    = "#e0a526"
	colorBad        = "#c9302c"
	colorIdle       = "#9ecae1"
	colorInfo       = "#4e79a7"
	// colorAffinity is session affinity breaks (gRFC A55): not an RPC
	// failure.
	colorAffinity = "#ad494a"
)

// stateColor is the colour of a track state: its cause's when failing.
func stateColor(s fleet.TrackState) string {
	switch s {
	case fleet.TrackUp:
		return colorUp
	case fleet.TrackFallback:
		return colorFallback
	case fleet.TrackNotRunning:
		return colorNotRunning
	}
	c, _ := s.Cause()
	return causeColor(c)
}

// stateLabel names a track state for people: its cause's name when failing.
func stateLabel(s fleet.TrackState) string {
	switch s {
	case fleet.TrackUp:
		return "up"
	case fleet.TrackFallback:
		return "on fallback"
	case fleet.TrackNotRunning:
		return "not running"
	}
	return "failing: " + s.String()
}
