package tomlpos

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// crossCheckDocs are realistic documents, every key of which Locate must
// find.
var crossCheckDocs = map[string]string{
	"scenario": `# A scenario: two groups of clients, one restarted.
name = "restart-storm"
description = "the edge clients restart at once"
seed = 7
duration = "10m"
sample_interval = "1s"

[[fleet.group]]
name = "edge"
clients = 1_000
start_at = "0s"
start_spread = "30s"

[[fleet.group]]
name = "core"
clients = 50

[[fleet.restart]]
group = "edge"
at = "5m"
fraction = 0.5
spread = "10s"
downtime = "5s"
`,

	"toml.io example": `# This is a TOML document

title = "TOML Example"

[owner]
name = "Tom Preston-Werner"
dob = 1979-05-27T07:32:00-08:00

[database]
enabled = true
ports = [ 8000, 8001, 8002 ]
data = [ ["delta", "phi"], [3.14] ]
temp_targets = { cpu = 79.5, case = 72.0 }

[servers]

[servers.alpha]
ip = "10.0.0.1"
role = "frontend"

[servers.beta]
ip = "10.0.0.2"
role = "backend"
`,

	"TOML spec constructs": `"key with spaces" = 1
'quoted "value"' = "x"
"\u00e9t\u00e9" = 2
"tab\there" = 3
"" = "empty"
site."google.com" = true
3.14159 = "pi"
fruit.apple.color = "red"
fruit . apple . taste . sweet = true
str = "I'm a string. \"You can quote me\". Name\tJos\u00E9\nLocation\tSF. # = ["
winpath = 'C:\Users\nodejs\templates'
regex = '<\i\c*\s*>'
lines = '''
The first newline is
trimmed in raw strings. x = 1
[not.a.table]
'''
str7 = """"This," she said, "is just a pointless statement.""""
quot15 = '''Here are fifteen quotation marks: """""""""""""""'''
apos15 = "Here are fifteen apostrophes: '''''''''''''''"
str3 = """\
       The quick brown \
       fox jumps over \
       the lazy dog.\
       """
int = [+99, 42, 0, -17, 1_000, 5_349_221, 0xDEADBEEF, 0xdead_beef, 0o755, 0b11010110]
flt = [+1.0, 3.1415, -0.01, 5e+22, 1e06, -2E-2, 6.626e-34, 224_617.445_991_228, inf, +inf, -nan]
odt = [1979-05-27T07:32:00Z, 1979-05-27T00:32:00-07:00, 1979-05-27 07:32:00Z]
ldt = [1979-05-27T07:32:00, 1979-05-27T00:32:00.999999]
ld1 = 1979-05-27
lt = [07:32:00, 00:32:00.999999]
nested_mixed_array = [ [ 1, 2 ], ["a", "b", "c"] ]
contributors = [
  "Foo Bar <foo@example.com>",
  { name = "Baz Qux", email = "bazqux@example.com", url = "https://example.com/bazqux" },
]
numbers = [
  1,
  2, # this is ok
]
name = { first = "Tom", last = "Preston-Werner" }
animal = { type.name = "pug" }
multi = {
  a = 1,   # TOML 1.1
  b.c = [ { d = 1 } ],
}

[dog."tater.man"]
type.name = "pug"

[ j . "ʞ" . 'l' ]
k = 1

[[products]]
name = "Hammer"
sku = 738594937

[[products]]  # empty table within the array

[[products]]
name = "Nail"
color = "gray"
desc = """
[[products]]
name = "fake"
"""

[[fruits]]
name = "apple"

[fruits.physical]  # subtable
color = "red"
shape = "round"

[[fruits.varieties]]  # nested array of tables
name = "red delicious"

[[fruits.varieties]]
name = "granny smith"

[[fruits]]
name = "banana"

[[fruits.varieties]]
name = "plantain"
points = [ { x = 1, y = 2, z = 3 },
           { x = 7, y = 8, z = 9 },
           { x = 2, y = 4, z = 8 } ]
`,
}

func TestLocateFindsEveryKeyBurntSushiFinds(t *testing.T) {
	for name, doc := range crossCheckDocs {
		for _, eol := range []string{"\n", "\r\n"} {
			doc := strings.ReplaceAll(doc, "\n", eol)
			var v any
			md, err := toml.Decode(doc, &v)
			if err != nil {
				t.Fatalf("%s: BurntSushi rejects the document: %v", name, err)
			}
			crossCheck(t, name, md, Locate(doc))
		}
	}
}

// crossCheck checks that x holds every key md reports. BurntSushi's keys have
// no indexes, so paths are compared without them.
func crossCheck(t *testing.T, name string, md toml.MetaData, x *Index) {
	t.Helper()
	have := make(map[string]bool)
	for n, nd := range x.nodes {
		if !nd.set {
			continue
		}
		var segs []string
		for ; n != 0; n = x.nodes[n].parent {
			if seg := x.nodes[n].seg; seg[0] != '[' {
				segs = append(segs, seg)
			}
		}
		var b strings.Builder
		for i := len(segs) - 1; i >= 0; i-- {
			b.WriteString(segs[i])
			if i > 0 {
				b.WriteByte('.')
			}
		}
		have[b.String()] = true
	}
	for _, k := range md.Keys() {
		parts := make([]string, len(k))
		for i, p := range k {
			parts[i] = quote(p)
		}
		if p := strings.Join(parts, "."); !have[p] {
			t.Errorf("%s: BurntSushi has key %s (%s), Locate has not", name, p, k)
		}
	}
}
