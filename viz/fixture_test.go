package viz

import (
	"fmt"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
)

// fixture builds, by hand, the Results of an imaginary run: a primary
// control plane down from 120 s to 420 s while 20 % of the fleet restarts.
// It has nseries series of samples one second apart.
func fixture(nseries, samples int) *fleet.Results {
	r := &fleet.Results{
		Scenario:       "primary-outage",
		Description:    "Primary control plane down for 5 minutes while 20 % of clients restart.",
		Seed:           42,
		Clients:        300,
		Duration:       time.Duration(samples) * time.Second,
		Events:         1234567,
		SampleInterval: time.Second,
		Samples:        samples,
		Metrics: []fleet.Metric{
			{Path: "fleet.clients_started", Value: 300},
			{Path: "fleet.clients_stopped", Value: 60},
			{Path: "rpc.failed", Value: 1234},
			{Path: "rpc.failure_window.p50_seconds", Value: 1.5},
			{Path: "rpc.failure_window.p99_seconds", Value: 4.25},
			{Path: "xds.resource_timer.fired", Value: 17},
		},
		Faults: []fleet.Fault{
			{Label: "primary down", Start: 120 * time.Second, End: 420 * time.Second},
			{Label: "20% restart", Start: 200 * time.Second, End: 230 * time.Second},
		},
		Resolved: "name = \"primary-outage\"\nseed = 42\n\n[fleet]\nclients = 300\n",
	}
	units := []string{"clients", "RPCs/s", "streams", "watches", "events/s"}
	for k := 0; k < nseries; k++ {
		s := fleet.Series{
			Name:   fmt.Sprintf("metric%d.value", k),
			Title:  fmt.Sprintf("Metric %d", k),
			Unit:   units[k%len(units)],
			Values: make([]float64, samples),
		}
		if k == 0 {
			s.Name, s.Title, s.Unit = "clients.running", "Running clients", "clients"
		}
		if k == 1 {
			s.Name, s.Title, s.Unit = "rpc.failures", "Failed RPCs per second", "RPCs/s"
		}
		for i := range s.Values {
			t := float64(i)
			switch {
			case k == 0 && i >= 200 && i < 230:
				s.Values[i] = 240
			case k == 0:
				s.Values[i] = 300
			case k == 1 && i >= 135 && i < 430:
				s.Values[i] = 12.5 + float64(i%17)/4
			case k == 1:
				s.Values[i] = 0
			default:
				s.Values[i] = float64(k*10) + float64((i*(k+3))%97)/8 + t/1000
			}
		}
		r.Series = append(r.Series, s)
	}
	for i := 0; i < 250; i++ {
		start := time.Duration(i) * 1500 * time.Millisecond
		r.Intervals = append(r.Intervals, fleet.Interval{
			Entity: fmt.Sprintf("client-%03d", i),
			Kind:   "lifetime",
			Start:  start,
			End:    start + time.Duration(30+i%50)*time.Second,
		})
	}
	return r
}
