package main

import (
	"context"
	"os"
	"testing"

	"github.com/xdssim/xdssim/validate/fidelity"
	"github.com/xdssim/xdssim/validate/grpcgo"
)

func TestMain(m *testing.M) {
	grpcgo.MaybeRunClient()
	os.Exit(m.Run())
}

// TestGRPCGoAgreesWithTheSimulation runs every case in cases/ against real
// grpc-go and the simulator, and fails on any disagreement. Each case runs
// in real time (at most a minute); -short skips them all.
func TestGRPCGoAgreesWithTheSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time cases; run without -short")
	}
	results, err := runCases(context.Background(), "cases", "", t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s\n%s", fidelity.Table(results), fidelity.ProcessingTable(results))
	for _, r := range results {
		if d := r.MeshDetails(); d != "" {
			t.Logf("\n%s", d)
		}
	}
	for _, r := range results {
		if !r.Pass() {
			t.Errorf("case %s disagrees with grpc-go:\n%s", r.Case, r.Failures())
		}
	}
}

// TestGRPCGoAgreesOnTheLongCases runs the cases in cases-long/, which take
// minutes of real time each (a blackhole must outlast keepalive's 5
// minutes), when XDSSIM_VALIDATE_LONG is set; .ci/run leaves them out.
func TestGRPCGoAgreesOnTheLongCases(t *testing.T) {
	if os.Getenv("XDSSIM_VALIDATE_LONG") == "" {
		t.Skip("minutes of real time; set XDSSIM_VALIDATE_LONG=1 (or run: go run . -cases cases-long)")
	}
	results, err := runCases(context.Background(), "cases-long", "", t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", fidelity.Table(results))
	for _, r := range results {
		if !r.Pass() {
			t.Errorf("case %s disagrees with grpc-go:\n%s", r.Case, r.Failures())
		}
	}
}
