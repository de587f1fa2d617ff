// Command validate runs xdssim's fidelity cases: each case in cases/ is
// simulated with profile grpc-go and run for real against grpc-go, and the
// two are compared (package fidelity). It prints the comparison table and
// exits 1 if any case fails.
//
//	cd validate && go run . [-run REGEXP] [-out DIR] [-parallel N]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/xdssim/xdssim/validate/fidelity"
	"github.com/xdssim/xdssim/validate/grpcgo"
)

func main() {
	grpcgo.MaybeRunClient()
	dir := flag.String("cases", "cases", "the directory of case scenarios")
	run := flag.String("run", "", "run only the cases whose name matches this regular expression")
	out := flag.String("out", "", "write each case's transcripts (sim.txt, real.txt) under this directory")
	parallel := flag.Int("parallel", 3, "cases run at once (each is real time, mostly idle)")
	flag.Parse()
	results, err := runCases(context.Background(), *dir, *run, *out, *parallel)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Print(fidelity.Table(results))
	for _, r := range results {
		fmt.Print(r.MeshDetails())
	}
	if t := fidelity.ProcessingTable(results); t != "" {
		fmt.Printf("\nProcessing times in the NACK storms:\n\n%s", t)
	}
	failed := false
	for _, r := range results {
		if !r.Pass() {
			failed = true
			fmt.Fprint(os.Stderr, r.Failures())
		}
	}
	if failed {
		os.Exit(1)
	}
}

// runCases runs the matching cases, at most parallel at once, and returns
// their results in case order. Cases with a NACK storm run one at a time:
// the real clients and servers share the machine's CPUs, and two storms
// at once would slow each other, which the simulation's clients and
// servers, each on a machine of its own, do not.
func runCases(ctx context.Context, dir, match, out string, parallel int) ([]*fidelity.Result, error) {
	re, err := regexp.Compile(match)
	if err != nil {
		return nil, fmt.Errorf("-run: %w", err)
	}
	cases, err := fidelity.LoadCases(dir)
	if err != nil {
		return nil, err
	}
	var chosen []fidelity.Case
	for _, c := range cases {
		if re.MatchString(c.Config.Name) {
			chosen = append(chosen, c)
		}
	}
	results := make([]*fidelity.Result, len(chosen))
	errs := make([]error, len(chosen))
	run := func(i int) {
		c := chosen[i]
		o, err := fidelity.RunCase(ctx, c)
		if err != nil {
			errs[i] = fmt.Errorf("%s: %w", c.Config.Name, err)
			return
		}
		results[i] = o.Result
		if out != "" {
			errs[i] = o.WriteTranscripts(filepath.Join(out, c.Config.Name))
		}
	}
	// The cases without a NACK storm run a few at a time: they are mostly
	// idle, waiting on timers. A storm's rate is the machine's speed, so
	// the storm cases run after them, one at a time, alone.
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, c := range chosen {
		if fidelity.Storms(c.Config) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			run(i)
		}()
	}
	wg.Wait()
	for i, c := range chosen {
		if !fidelity.Storms(c.Config) {
			continue
		}
		run(i)
		// A real storm slower than the simulation's may be the machine's
		// doing: run again, and compare the fastest (fidelity.StormRuns).
		// -out keeps the last run's transcripts.
		runs := []*fidelity.Result{results[i]}
		for errs[i] == nil && len(runs) < fidelity.StormRuns && runs[len(runs)-1].SlowStormOnly() {
			run(i)
			runs = append(runs, results[i])
		}
		if errs[i] == nil {
			results[i] = fidelity.Fastest(runs)
		}
	}
	var msgs []string
	for _, e := range errs {
		if e != nil {
			msgs = append(msgs, e.Error())
		}
	}
	if len(msgs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(msgs, "\n"))
	}
	return results, nil
}
