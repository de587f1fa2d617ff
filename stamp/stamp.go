// Package stamp names the build of xdssim that wrote an output: its
// version, the version-control revision it was built from and whether that
// tree had uncommitted changes, and the Go version, as the Go toolchain
// recorded them in the binary (runtime/debug.ReadBuildInfo). Every output
// that carries figures names its build, so that a figure can be traced to
// the code that computed it, and the SHA-256 of the scenario it ran
// (scenarios.Scenario.SHA256).
//
// What the toolchain records depends on how the binary was built, and a
// stamp never fills in what it did not record: "go build" or "go install"
// in a git clone records the revision, whether the tree was modified and a
// pseudo-version such as v0.0.0-20261127083303-879b914b08c1 (with
// "+dirty" when modified); "go install module@version" records the
// version and no revision; "go run" (unless -buildvcs=true), a test binary
// (even then), "-buildvcs=false" (on the command line or in GOFLAGS), a
// git worktree (its .git is a file, which the go command does not take for
// a repository) and a tree copied without its .git record neither:
// Version is then "devel", and Revision and Dirty are Unknown.
package stamp

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Unknown is the Revision and Dirty of a build whose binary does not
// record them.
const Unknown = "unknown"

// Devel is the Version of a build whose binary records no module version.
const Devel = "devel"

// Build names the build of xdssim that wrote an output. Its fields are
// strings, each written as is in JSON ("build" in summary.json, sweep.json,
// compare.json, find.json and shard files), in the report's footer and as
// labels of xdssim_build_info in the OpenMetrics export.
type Build struct {
	// Version is the main module's version ("v1.2.0", a pseudo-version
	// such as "v0.0.0-20261127083303-879b914b08c1+dirty"), or Devel.
	Version string `json:"version"`
	// Revision is the version-control revision (a git commit's 40 hex
	// digits), or Unknown.
	Revision string `json:"revision"`
	// Dirty is "true" when the tree built had uncommitted changes,
	// "false" when it had none, Unknown when the binary does not say.
	Dirty string `json:"dirty"`
	// Go is the version of Go that built the binary ("go1.26.8").
	Go string `json:"go"`
}

// Read returns the build of the running binary. It is the same for the
// whole life of a process.
func Read() Build { return current() }

var current = sync.OnceValue(func() Build {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return FromBuildInfo(bi)
})

// FromBuildInfo returns the build that bi records; nil (a binary built
// without module support) records nothing but the Go version of the
// running program.
func FromBuildInfo(bi *debug.BuildInfo) Build {
	b := Build{Version: Devel, Revision: Unknown, Dirty: Unknown, Go: runtime.Version()}
	if bi == nil {
		return b
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	if bi.GoVersion != "" {
		b.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if s.Value != "" {
				b.Revision = s.Value
			}
		case "vcs.modified":
			if s.Value == "true" || s.Value == "false" {
				b.Dirty = s.Value
			}
		}
	}
	return b
}

// String is how the CLI and the HTML pages write a build:
// "devel (revision unknown, dirty unknown, go1.26.8)".
func (b Build) String() string {
	return fmt.Sprintf("%s (revision %s, dirty %s, %s)", b.Version, b.Revision, b.Dirty, b.Go)
}

// maxField bounds each field of a build read from a file.
const maxField = 256

// Check reports whether b is well formed, as a build read from a file (a
// shard) must be: every field present, printable ASCII without spaces
// (Go's own version may have spaces: "devel go1.27-abcdef Tue ..."), and
// Dirty one of "true", "false" and Unknown.
func (b Build) Check() error {
	for _, f := range []struct {
		name, v string
		spaces  bool
	}{{"version", b.Version, false}, {"revision", b.Revision, false}, {"dirty", b.Dirty, false}, {"go", b.Go, true}} {
		if f.v == "" {
			return fmt.Errorf("build.%s: missing", f.name)
		}
		if len(f.v) > maxField {
			return fmt.Errorf("build.%s: longer than %d bytes", f.name, maxField)
		}
		for _, c := range []byte(f.v) {
			if c < ' ' || c > '~' || (c == ' ' && !f.spaces) {
				return fmt.Errorf("build.%s: %q: expected printable ASCII without spaces", f.name, f.v)
			}
		}
	}
	if b.Dirty != "true" && b.Dirty != "false" && b.Dirty != Unknown {
		return fmt.Errorf("build.dirty: %q: expected true, false or %s", b.Dirty, Unknown)
	}
	return nil
}

// Run stamps the outputs of one run: the build that ran it and the
// SHA-256, in hex, of the scenario it ran, resolved
// (scenarios.Scenario.SHA256).
type Run struct {
	Build
	ScenarioSHA256 string
}

// Check reports whether r is well formed: its build (Build.Check), and a
// scenario hash of 64 lowercase hex digits.
func (r Run) Check() error {
	if err := r.Build.Check(); err != nil {
		return err
	}
	return CheckSHA256("scenario_sha256", r.ScenarioSHA256)
}

// CheckSHA256 reports whether h is a SHA-256 as outputs write it: 64
// lowercase hex digits. name names it in the error.
func CheckSHA256(name, h string) error {
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return fmt.Errorf("%s: expected 64 hex digits, found %q", name, h)
	}
	return nil
}
