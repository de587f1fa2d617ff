package sweep

import (
	"strconv"
	"testing"

	"github.com/xdssim/xdssim/scenarios"
)

func BenchmarkPlan1000(b *testing.B) {
	src, err := scenarios.Open("testdata/outage.toml")
	if err != nil {
		b.Fatal(err)
	}
	var vs, ws []string
	for i := 1; i <= 100; i++ {
		vs = append(vs, strconv.Itoa(i))
	}
	for i := 1; i <= 10; i++ {
		ws = append(ws, strconv.Itoa(i))
	}
	spec := Spec{Seeds: 1, MaxSeeds: 1, Params: []Param{{Key: "fleet.group[0].clients", Values: vs}, {Key: "control_plane[0].workers", Values: ws}}}
	for b.Loop() {
		if _, err := NewPlan(src, nil, spec); err != nil {
			b.Fatal(err)
		}
	}
}
