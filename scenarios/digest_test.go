package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// TestSHA256NamesWhatTheScenarioRuns: the hash of a resolved scenario
// changes with its seed, an override and the bytes of a file it names,
// and with nothing else: parsing the same input again, or giving an
// override the value the scenario already has, keeps it.
func TestSHA256NamesWhatTheScenarioRuns(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"shop.json", "shop-next.json", "bootstrap.json"} {
		b, err := os.ReadFile(filepath.Join("library", "mesh", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	doc := `name = "own"
duration = "4m"
[[control_plane]]
name = "istiod"
server_uri = "unix:///etc/istio/proxy/XDS"
resources = ["shop.json"]
[[fleet.group]]
clients = 2
bootstrap = "bootstrap.json"
`
	file := filepath.Join(dir, "own.toml")
	hash := func(t *testing.T, sets ...string) string {
		t.Helper()
		s, err := parseAt(t, file, doc, sets...)
		if err != nil {
			t.Fatal(err)
		}
		return s.SHA256()
	}
	base := hash(t)
	if len(base) != 64 {
		t.Fatalf("SHA256() = %q, want 64 hex digits", base)
	}
	if again := hash(t); again != base {
		t.Errorf("the same input hashes to %s, then %s", base, again)
	}
	if same := hash(t, "seed=1"); same != base {
		t.Errorf("an override to the scenario's own seed changed the hash")
	}
	for _, sets := range [][]string{{"seed=2"}, {"fleet.group[0].clients=3"}} {
		if other := hash(t, sets...); other == base {
			t.Errorf("override %v did not change the hash", sets)
		}
	}
	// A byte more in the dump (JSON whitespace: the same resources)
	// changes it: the hash is of the file as read.
	b, _ := os.ReadFile(filepath.Join(dir, "shop.json"))
	os.WriteFile(filepath.Join(dir, "shop.json"), append(b, '\n'), 0o644)
	if edited := hash(t); edited == base {
		t.Error("editing a file the scenario names did not change the hash")
	}

	// A scenario that names no file hashes to its TOML alone.
	s, err := Parse(&Source{Name: "plain", Data: []byte("duration = \"1m\"\n[[control_plane]]\nname = \"cp\"\n[[control_plane.service]]\nname = \"echo\"\n[[fleet.group]]\nclients = 1\n")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(s.TOML()))
	if got, want := s.SHA256(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("SHA256() = %s, want the SHA-256 of TOML(), %s", got, want)
	}
}
