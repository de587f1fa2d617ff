package tomlpos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// randomValues are values to put in random documents; some span lines, and
// some hold text that looks like keys, headers or comments.
var randomValues = []string{
	`1`, `-3.5e2`, `true`, `0xdead_beef`, `1979-05-27 07:32:00`, `07:32:00`,
	`"s # = [x]"`, `'c:\x # y'`, `"esc \" = 1 \\"`, `""`, `''`,
	"\"\"\"\nx = 1\n[fake]\n\"\"\"", "'''\n[[arr]]\n# no\n'''", `"""a\"""b""""`, `''''a'''''`,
	"\"\"\"line \\\n  continued\"\"\"",
	"[1, 2,\n  # c = 3\n  3,\n]", `{ a = 1, b = [ { c = "}" } ] }`, "{\n  a = 1, # x = 2\n}",
	`[]`, `{}`, `[[1], ["]"]]`, `{ "x.y" = 'z', p . q = 1 }`,
}

// randomDoc returns a random valid document and the positions of the keys,
// tables and values written in it.
func randomDoc(r *rand.Rand) (string, []loc) {
	var (
		b     strings.Builder
		want  []loc
		line  = 1
		table = ""
		arr   = 0 // [[arr]] headers so far
	)
	cols := func(s string) int { return utf8.RuneCountInString(s) + 1 }
	write := func(s string) {
		b.WriteString(s)
		line += strings.Count(s, "\n")
	}
	under := func(part string) string {
		if table == "" {
			return part
		}
		return table + "." + part
	}
	for i := range r.IntN(30) {
		indent := []string{"", "  ", "\t"}[r.IntN(3)]
		switch r.IntN(10) {
		case 0:
			p := fmt.Sprintf("t%d", i)
			want = append(want, loc{p, at(line, cols(indent)), Position{}})
			table = p
			write(indent + "[ " + p + " ]")
		case 1:
			p := fmt.Sprintf("arr[%d]", arr)
			arr++
			want = append(want, loc{p, at(line, cols(indent)), Position{}})
			table = p
			write(indent + "[[arr]]")
		case 2:
			if arr == 0 {
				continue
			}
			p := fmt.Sprintf("arr[%d].\"s %d\"", arr-1, i)
			want = append(want, loc{p, at(line, cols(indent)), Position{}})
			table = p
			write(fmt.Sprintf("%s[arr.'s %d']", indent, i))
		case 3:
			write(indent + "# [x] y = 1 '''")
		default:
			keys := [][2]string{ // as written, as a path part
				{fmt.Sprintf("k%d", i), fmt.Sprintf("k%d", i)},
				{fmt.Sprintf(`"q %d"`, i), fmt.Sprintf(`"q %d"`, i)},
				{fmt.Sprintf(`'l.%d'`, i), fmt.Sprintf(`"l.%d"`, i)},
				{fmt.Sprintf(`"é%d"`, i), fmt.Sprintf(`"é%d"`, i)},
				{fmt.Sprintf(`"\u0041%d"`, i), fmt.Sprintf(`A%d`, i)},
				{fmt.Sprintf(`d%d . "e"`, i), fmt.Sprintf(`d%d.e`, i)},
			}
			k := keys[r.IntN(len(keys))]
			lhs := indent + k[0] + " = "
			want = append(want, loc{under(k[1]), at(line, cols(indent)), at(line, cols(lhs))})
			write(lhs + randomValues[r.IntN(len(randomValues))])
			if r.IntN(3) == 0 {
				write(" # = [c]")
			}
		}
		write("\n")
	}
	return b.String(), want
}

func TestLocateRandomDocuments(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		doc, want := randomDoc(r)
		if r.IntN(2) == 0 {
			doc = strings.ReplaceAll(doc, "\n", "\r\n")
		}
		if r.IntN(4) == 0 {
			doc = "\uFEFF" + doc
		}
		var v any
		md, err := toml.Decode(doc, &v)
		if err != nil {
			t.Fatalf("BurntSushi rejects %q: %v", doc, err)
		}
		x := Locate(doc)
		for _, w := range want {
			if got, ok := x.Key(w.path); !ok || got != w.key {
				t.Errorf("%q: Key(%s) = %v, %v; want %v, true", doc, w.path, got, ok, w.key)
			}
			got, ok := x.Value(w.path)
			if w.val == (Position{}) && ok || w.val != (Position{}) && (!ok || got != w.val) {
				t.Errorf("%q: Value(%s) = %v, %v; want %v", doc, w.path, got, ok, w.val)
			}
		}
		crossCheck(t, "random document", md, x)
		checkIndex(t, doc, x)
		if t.Failed() {
			t.FailNow()
		}
	}
}
