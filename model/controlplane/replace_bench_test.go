package controlplane_test

import (
	"fmt"
	"testing"

	cp "github.com/xdssim/xdssim/model/controlplane"
)

// BenchmarkReplaceEndpoints measures a rolling deploy of every endpoint of
// a service of n (replace_endpoints, count = n) with no stream open: per
// endpoint, the cost stays flat as n grows, where looking for each new
// address by a scan of the endpoints was n² (30 000 endpoints: 107 s).
func BenchmarkReplaceEndpoints(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 30_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := mustNew(b, cp.Config{Name: "cp", Services: []cp.Service{svc("echo", n)}})
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := s.ReplaceEndpoints(0, "echo", "", 0, n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/endpoint")
		})
	}
}
