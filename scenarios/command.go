package scenarios

import (
	"strconv"
	"strings"
)

// Command is the xdssim command line that runs cmd ("run", "shrink") on
// the scenario ref (a file or library name) with the seed and overrides
// given, each word quoted for a POSIX shell where it needs to be. A
// "seed=" override is left out: --seed says it.
func Command(cmd, ref string, seed uint64, sets []string) string {
	words := []string{"xdssim", cmd, ShellQuote(ref), "--seed", strconv.FormatUint(seed, 10)}
	for _, s := range sets {
		if strings.HasPrefix(strings.TrimSpace(s), "seed=") {
			continue
		}
		flag, arg := OverrideFlag(s)
		words = append(words, flag, ShellQuote(arg))
	}
	return strings.Join(words, " ")
}

// OverrideFlag returns the flag and argument that give an override: "key=v"
// is --set key=v, "key+={...}" (an element appended to an array of tables)
// is --add key={...}.
func OverrideFlag(o string) (flag, arg string) {
	if k, v, ok := strings.Cut(o, "="); ok && strings.HasSuffix(strings.TrimSpace(k), "+") {
		return "--add", strings.TrimSuffix(strings.TrimSpace(k), "+") + "=" + v
	}
	return "--set", o
}

// ShellQuote quotes s for a POSIX shell unless it needs no quoting.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
