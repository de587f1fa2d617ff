package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
)

// SHA256 is the SHA-256, in hex, of what the scenario runs: its resolved
// TOML (TOML, what `xdssim validate` prints before its closing comment),
// which holds the seed and every override, followed, when the scenario
// names files of a user's own mesh (control_plane[].resources,
// change[].resources, fleet.group[].bootstrap), by one line per file in
// the order of their names, `# file "NAME" sha256 HEX`, with the SHA-256
// of its bytes as read. A scenario that names no file hashes to the
// SHA-256 of TOML() alone. Two runs of one build of xdssim with the same
// hash run the same thing; summary.json, sweep.json, compare.json and the
// manifest of an output directory carry it.
func (s *Scenario) SHA256() string {
	h := sha256.New()
	io.WriteString(h, s.TOML())
	refs := make([]string, 0, len(s.mesh.sums))
	for ref := range s.mesh.sums {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	for _, ref := range refs {
		sum := s.mesh.sums[ref]
		fmt.Fprintf(h, "# file %q sha256 %s\n", ref, hex.EncodeToString(sum[:]))
	}
	return hex.EncodeToString(h.Sum(nil))
}
