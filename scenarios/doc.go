// Package scenarios reads xdssim scenario files: TOML documents that
// describe a fleet of gRPC clients, the control plane they talk to, and the
// faults and changes that happen to them over virtual time.
//
// Decoding is strict. A key the schema does not have is an error, keys are
// case-sensitive, durations are strings with a unit ("15s"), and values are
// range-checked. Every problem in a document is reported at once, each as
// file:line:col, the key path, what was expected and what was found.
// Defaults are applied in one place (setDefaults and resolve in schema.go),
// and Scenario.TOML prints the fully resolved scenario.
//
// A library of scenarios is embedded in the binary (library/*.toml); Open
// takes either a library name or a file path.
package scenarios
