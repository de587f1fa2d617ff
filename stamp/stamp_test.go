package stamp

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestFromBuildInfoSaysOnlyWhatTheBinaryRecords: each way of building
// xdssim records its own part of the build information (the go command's
// -buildvcs, cmd/go/internal/load.setBuildInfo); a stamp takes what is
// recorded and says "devel" or "unknown" for the rest, never a guess.
func TestFromBuildInfoSaysOnlyWhatTheBinaryRecords(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-27T08:33:03Z"}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "879b914b08c1adee68d666f822139378c2cedf88"
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want Build
	}{
		{"no build information", nil, Build{Devel, Unknown, Unknown, runtime.Version()}},
		{"go run, a test binary, -buildvcs=false, a worktree",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/xdssim/xdssim", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}}},
			Build{Devel, Unknown, Unknown, "go1.26.8"}},
		{"go build in a clean clone",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261127083303-879b914b08c1"}, Settings: vcs(rev, "false")},
			Build{"v0.0.0-20261127083303-879b914b08c1", rev, "false", "go1.26.8"}},
		{"go build in a modified clone",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261127083303-879b914b08c1+dirty"}, Settings: vcs(rev, "true")},
			Build{"v0.0.0-20261127083303-879b914b08c1+dirty", rev, "true", "go1.26.8"}},
		{"go install module@version",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}},
			Build{"v1.2.0", Unknown, Unknown, "go1.26.8"}},
		{"an empty revision and an odd modified flag",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: ""}, Settings: vcs("", "maybe")},
			Build{Devel, Unknown, Unknown, "go1.26.8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromBuildInfo(tt.bi)
			if got != tt.want {
				t.Errorf("FromBuildInfo = %+v, want %+v", got, tt.want)
			}
			if err := got.Check(); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

// TestReadIsTheRunningBinarys: the running binary (this test's) is
// stamped with the Go that built it, and says what it records: a test
// binary records no version or revision, even with -buildvcs=true.
func TestReadIsTheRunningBinarys(t *testing.T) {
	b := Read()
	if b.Go != runtime.Version() {
		t.Errorf("Go = %q, want %q", b.Go, runtime.Version())
	}
	if err := b.Check(); err != nil {
		t.Error(err)
	}
	bi, _ := debug.ReadBuildInfo()
	if want := FromBuildInfo(bi); b != want {
		t.Errorf("Read() = %+v, want %+v", b, want)
	}
	if Read() != b {
		t.Error("Read changed within one process")
	}
	// The go command stamps no module version and no VCS information
	// into a test binary, whatever -buildvcs says: an output a test
	// writes says devel and unknown, as the docs promise.
	if b.Version != Devel || b.Revision != Unknown || b.Dirty != Unknown {
		t.Errorf("a test binary reads %+v, want version %s, revision and dirty %s", b, Devel, Unknown)
	}
}

func TestCheckRefusesAMalformedBuild(t *testing.T) {
	good := Build{"v1.2.0", "879b914b08c1adee68d666f822139378c2cedf88", "false", "go1.26.8"}
	tests := []struct {
		name string
		edit func(*Build)
		want string
	}{
		{"missing version", func(b *Build) { b.Version = "" }, "build.version: missing"},
		{"missing go", func(b *Build) { b.Go = "" }, "build.go: missing"},
		{"dirty not a flag", func(b *Build) { b.Dirty = "yes" }, `build.dirty: "yes": expected true, false or unknown`},
		{"a newline in the revision", func(b *Build) { b.Revision = "abc\ndef" }, "build.revision"},
		{"a space in the version", func(b *Build) { b.Version = "v1 2" }, "build.version"},
		{"a huge field", func(b *Build) { b.Revision = strings.Repeat("a", 300) }, "longer than 256 bytes"},
	}
	if err := good.Check(); err != nil {
		t.Fatalf("a good build: %v", err)
	}
	dev := good
	dev.Go = "devel go1.27-abcdef Tue Jan 6 10:00:00 2026 +0000"
	if err := dev.Check(); err != nil {
		t.Errorf("a development toolchain's Go version: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := good
			tt.edit(&b)
			if err := b.Check(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestStringNamesEveryField(t *testing.T) {
	b := Build{Devel, Unknown, Unknown, "go1.26.8"}
	if got, want := b.String(), "devel (revision unknown, dirty unknown, go1.26.8)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
