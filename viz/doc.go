// Package viz turns the Results of one xdssim run into the files a person
// reads: summary.json, every headline figure as deterministic, versioned
// JSON, and report.html, a single self-contained page whose charts are drawn
// by an inlined copy of the echarts runtime, so the report opens offline.
//
// Both outputs are pure functions of a fleet.Results and the scenario's
// expectations checked against it (Evaluate): the same Results give the
// same bytes, on any machine (docs/architecture.md, Determinism contract). Nothing
// here reads a clock, a random source or the environment.
//
// The echarts runtime lives in assets/ (echarts.min.js, vendored byte for
// byte from the npm package echarts@5.6.0 with its LICENSE and NOTICE);
// assets/refresh.sh re-fetches and verifies it.
package viz
