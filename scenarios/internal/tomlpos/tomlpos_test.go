package tomlpos

import (
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func at(line, col int) Position { return Position{Line: line, Col: col} }

// loc is what a test expects at one path: where the key stands and where its
// value does; a zero val means Value must report false.
type loc struct {
	path     string
	key, val Position
}

// locateTests are documents BurntSushi accepts (TestLocateTestsAreValid
// checks it), with the positions Locate must find in them.
var locateTests = []struct {
	name   string
	doc    string
	want   []loc
	absent []string // paths Key must not find
}{
	{
		name: "top-level keys",
		doc:  "name = \"basic\"\nseed = 42\n",
		want: []loc{
			{"name", at(1, 1), at(1, 8)},
			{"seed", at(2, 1), at(2, 8)},
		},
	},
	{
		name: "table header at its bracket, keys relative to it",
		doc:  "title = \"t\"\n\n[fleet]\nclients = 3\n",
		want: []loc{
			{"title", at(1, 1), at(1, 9)},
			{"fleet", at(3, 1), Position{}},
			{"fleet.clients", at(4, 1), at(4, 11)},
		},
		absent: []string{"clients"},
	},
	{
		name: "indented header with blanks around dots and a quoted part",
		doc:  "  [ fleet . \"a.b\" ] # comment\n  x = 1\n",
		want: []loc{
			{"fleet", at(1, 3), Position{}},
			{`fleet."a.b"`, at(1, 3), Position{}},
			{`fleet."a.b".x`, at(2, 3), at(2, 7)},
		},
		absent: []string{"fleet.a.b", "fleet.a"},
	},
	{
		name: "array of tables counts its headers",
		doc:  "[[fleet.group]]\nclients = 1\n\n[[fleet.group]]\nclients = 2\n",
		want: []loc{
			{"fleet", at(1, 1), Position{}},
			{"fleet.group", at(1, 1), Position{}},
			{"fleet.group[0]", at(1, 1), Position{}},
			{"fleet.group[0].clients", at(2, 1), at(2, 11)},
			{"fleet.group[1]", at(4, 1), Position{}},
			{"fleet.group[1].clients", at(5, 1), at(5, 11)},
		},
		absent: []string{"fleet.group[2]", "fleet.group.clients"},
	},
	{
		name: "array of tables with blanks inside its brackets",
		doc:  "[[ a ]]\n[[ a ]]\nx = 1\n",
		want: []loc{
			{"a[0]", at(1, 1), Position{}},
			{"a[1]", at(2, 1), Position{}},
			{"a[1].x", at(3, 1), at(3, 5)},
		},
	},
	{
		name: "sub-table of an array of tables belongs to its last element",
		doc:  "[[fleet.group]]\nname = \"a\"\n[[fleet.group]]\nname = \"b\"\n[fleet.group.start]\nat = \"0s\"\n",
		want: []loc{
			{"fleet.group[1].start", at(5, 1), Position{}},
			{"fleet.group[1].start.at", at(6, 1), at(6, 6)},
		},
		absent: []string{"fleet.group.start", "fleet.group[0].start"},
	},
	{
		name: "nested arrays of tables count per parent element",
		doc:  "[[a]]\n[[a.b]]\n[[a.b]]\n[[a]]\n[[a.b]]\nx = 1\n",
		want: []loc{
			{"a[0]", at(1, 1), Position{}},
			{"a[0].b", at(2, 1), Position{}},
			{"a[0].b[0]", at(2, 1), Position{}},
			{"a[0].b[1]", at(3, 1), Position{}},
			{"a[1]", at(4, 1), Position{}},
			{"a[1].b", at(5, 1), Position{}},
			{"a[1].b[0]", at(5, 1), Position{}},
			{"a[1].b[0].x", at(6, 1), at(6, 5)},
		},
		absent: []string{"a[1].b[1]", "a[2]"},
	},
	{
		name: "elements of an array of primitives",
		doc:  "tags = [\"a\", \"b\",\n  \"c\", # comment, with ] and [x] and \"\n]\n",
		want: []loc{
			{"tags", at(1, 1), at(1, 8)},
			{"tags[0]", at(1, 9), at(1, 9)},
			{"tags[1]", at(1, 14), at(1, 14)},
			{"tags[2]", at(2, 3), at(2, 3)},
		},
		absent: []string{"tags[3]", "x"},
	},
	{
		name: "nested arrays",
		doc:  "m = [[1, 2], [], [[3]]]\n",
		want: []loc{
			{"m[0]", at(1, 6), at(1, 6)},
			{"m[0][1]", at(1, 10), at(1, 10)},
			{"m[1]", at(1, 14), at(1, 14)},
			{"m[2][0][0]", at(1, 20), at(1, 20)},
		},
		absent: []string{"m[1][0]", "m[3]"},
	},
	{
		name: "inline table",
		doc:  "start = { at = \"0s\", spread = \"30s\" }\n",
		want: []loc{
			{"start", at(1, 1), at(1, 9)},
			{"start.at", at(1, 11), at(1, 16)},
			{"start.spread", at(1, 22), at(1, 31)},
		},
	},
	{
		name: "empty inline table",
		doc:  "e = {}\nf = 1\n",
		want: []loc{
			{"e", at(1, 1), at(1, 5)},
			{"f", at(2, 1), at(2, 5)},
		},
	},
	{
		name: "nested inline tables and arrays of inline tables",
		doc:  "x = [{a = 1}, {a = 2, b = {c = 3}}]\n",
		want: []loc{
			{"x", at(1, 1), at(1, 5)},
			{"x[0]", at(1, 6), at(1, 6)},
			{"x[0].a", at(1, 7), at(1, 11)},
			{"x[1]", at(1, 15), at(1, 15)},
			{"x[1].a", at(1, 16), at(1, 20)},
			{"x[1].b", at(1, 23), at(1, 27)},
			{"x[1].b.c", at(1, 28), at(1, 32)},
		},
		absent: []string{"x.a", "x[2]"},
	},
	{
		name: "inline table in an array of tables",
		doc:  "[[g]]\n[[g]]\nstart = { at = 1 }\n",
		want: []loc{
			{"g[1].start", at(3, 1), at(3, 9)},
			{"g[1].start.at", at(3, 11), at(3, 16)},
		},
	},
	{
		name: "inline table spanning lines, TOML 1.1",
		doc:  "t = {\n  a = 1, # comment = 2\n  b = [\n    2,\n  ],\n}\nnext = 3\n",
		want: []loc{
			{"t", at(1, 1), at(1, 5)},
			{"t.a", at(2, 3), at(2, 7)},
			{"t.b", at(3, 3), at(3, 7)},
			{"t.b[0]", at(4, 5), at(4, 5)},
			{"next", at(7, 1), at(7, 8)},
		},
		absent: []string{"comment", "t.comment"},
	},
	{
		name: "dotted keys and the tables they define",
		doc:  "[t]\na.b.c = 1\na . d = 2\n\"x\".'y' = 3\n",
		want: []loc{
			{"t.a", at(2, 1), Position{}},
			{"t.a.b", at(2, 1), Position{}},
			{"t.a.b.c", at(2, 1), at(2, 9)},
			{"t.a.d", at(3, 1), at(3, 9)},
			{"t.x", at(4, 1), Position{}},
			{"t.x.y", at(4, 1), at(4, 11)},
		},
	},
	{
		name: "dotted keys in an inline table",
		doc:  "s = { a.b = 1 }\n",
		want: []loc{
			{"s.a", at(1, 7), Position{}},
			{"s.a.b", at(1, 7), at(1, 13)},
		},
	},
	{
		name: "quoted keys are normalised",
		doc: "\"a.b\" = 1\n'lit' = 2\n\"bare\" = 3\n\"\" = 4\n\"tab\\tkey\" = 5\n" +
			"\"a\\\"b\" = 6\n'c\\d' = 7\n[ 'x y' . \"z\\u0041\" ]\n\"q\" = 8\n",
		want: []loc{
			{`"a.b"`, at(1, 1), at(1, 9)},
			{"lit", at(2, 1), at(2, 9)},
			{"bare", at(3, 1), at(3, 10)},
			{`""`, at(4, 1), at(4, 6)},
			{`"tab\tkey"`, at(5, 1), at(5, 14)},
			{`"a\"b"`, at(6, 1), at(6, 10)},
			{`"c\\d"`, at(7, 1), at(7, 9)},
			{`"x y".zA`, at(8, 1), Position{}},
			{`"x y".zA.q`, at(9, 1), at(9, 7)},
		},
		absent: []string{"a.b", "a", "q"},
	},
	{
		name: "keys after multi-line strings holding keys and headers",
		doc: "a = \"\"\"\nx = 1\n[fake]\n\"\"\"\nb = '''\ny = 2\n[[fake2]]\n# not a comment\n'''\n" +
			"c = 3\n[real]\nd = \"\"\"one line\"\"\"\ne = 4\n",
		want: []loc{
			{"a", at(1, 1), at(1, 5)},
			{"b", at(5, 1), at(5, 5)},
			{"c", at(10, 1), at(10, 5)},
			{"real", at(11, 1), Position{}},
			{"real.d", at(12, 1), at(12, 5)},
			{"real.e", at(13, 1), at(13, 5)},
		},
		absent: []string{"x", "fake", "y", "fake2", "a.x", "b.y"},
	},
	{
		name: "multi-line basic string with escaped quotes, continuations and quotes before its end",
		doc: "s = \"\"\"a \\\"\"\" b \\\n   c \"\" d\"\"\"\"\nt = \"\"\"\"\"\"\nu = \"\"\"x\"\"\"\"\"\n" +
			"v = ''''quoted' = 1 '''\nw = '''x'''''\nz = 1\n",
		want: []loc{
			{"s", at(1, 1), at(1, 5)},
			{"t", at(3, 1), at(3, 5)},
			{"u", at(4, 1), at(4, 5)},
			{"v", at(5, 1), at(5, 5)},
			{"w", at(6, 1), at(6, 5)},
			{"z", at(7, 1), at(7, 5)},
		},
		absent: []string{"quoted"},
	},
	{
		name: "a hash inside a string is not a comment",
		doc:  "a = \"# not [a] comment = 1\" # real = 2\nb = 'x # y'\nc = [\"#\", '#'] # [z]\nd = 1\n",
		want: []loc{
			{"a", at(1, 1), at(1, 5)},
			{"b", at(2, 1), at(2, 5)},
			{"c[0]", at(3, 6), at(3, 6)},
			{"c[1]", at(3, 11), at(3, 11)},
			{"d", at(4, 1), at(4, 5)},
		},
		absent: []string{"real", "z", "c[2]"},
	},
	{
		name: "escaped quote and backslash in a basic string",
		doc:  "a = \"x\\\" = [y] \\\\\"\nb = 1\n",
		want: []loc{
			{"a", at(1, 1), at(1, 5)},
			{"b", at(2, 1), at(2, 5)},
		},
		absent: []string{"y"},
	},
	{
		name: "CRLF line endings",
		doc:  "[t]\r\na = 1\r\nb = [\r\n  1,\r\n  2, # x\r\n]\r\nc = \"\"\"\r\nd = 1\r\n\"\"\"\r\ne = 1\r\n",
		want: []loc{
			{"t", at(1, 1), Position{}},
			{"t.a", at(2, 1), at(2, 5)},
			{"t.b", at(3, 1), at(3, 5)},
			{"t.b[0]", at(4, 3), at(4, 3)},
			{"t.b[1]", at(5, 3), at(5, 3)},
			{"t.c", at(7, 1), at(7, 5)},
			{"t.e", at(10, 1), at(10, 5)},
		},
		absent: []string{"t.d", "t.b[2]"},
	},
	{
		name: "a byte order mark is not counted",
		doc:  "\uFEFFa = 1\n[t]\n",
		want: []loc{
			{"a", at(1, 1), at(1, 5)},
			{"t", at(2, 1), Position{}},
		},
	},
	{
		name: "a tab counts as one column",
		doc:  "\ta\t=\t1\n[t]\n\t\tb = 2\n",
		want: []loc{
			{"a", at(1, 2), at(1, 6)},
			{"t.b", at(3, 3), at(3, 7)},
		},
	},
	{
		name: "columns count characters, not bytes",
		doc:  "\"ключ\" = 1\nx = { \"é\" = \"ü€😀\", k = 1 }\n",
		want: []loc{
			{`"ключ"`, at(1, 1), at(1, 10)},
			{`x."é"`, at(2, 7), at(2, 13)},
			{"x.k", at(2, 20), at(2, 24)},
		},
	},
	{
		name: "numbers, booleans, dates and times are values to skip",
		doc: "d1 = 1979-05-27 07:32:00Z\n" +
			"d2 = [1979-05-27 07:32:00, 1979-05-27T00:32:00.999999-07:00, 07:32:00]\n" +
			"n = [+1_000, 0xff, 0o7, 0b1, 1e10, -3.14, inf, -nan, true]\n" +
			"e = 1\n",
		want: []loc{
			{"d1", at(1, 1), at(1, 6)},
			{"d2[0]", at(2, 7), at(2, 7)},
			{"d2[1]", at(2, 28), at(2, 28)},
			{"d2[2]", at(2, 62), at(2, 62)},
			{"n[1]", at(3, 14), at(3, 14)},
			{"n[8]", at(3, 54), at(3, 54)},
			{"e", at(4, 1), at(4, 5)},
		},
		absent: []string{"d2[3]", "n[9]"},
	},
	{
		name: "a header defining an implicit table points at it",
		doc:  "# c\n[a.b.c]\n\n[a]\nx = 1\n",
		want: []loc{
			{"a", at(4, 1), Position{}},
			{"a.b", at(2, 1), Position{}},
			{"a.b.c", at(2, 1), Position{}},
			{"a.x", at(5, 1), at(5, 5)},
		},
	},
	{
		name: "comments and blank lines only",
		doc:  "# only = 1\n\n   \n",
		absent: []string{
			"only",
		},
	},
	{
		name: "no newline at the end",
		doc:  "a = 1",
		want: []loc{
			{"a", at(1, 1), at(1, 5)},
		},
	},
}

func TestLocate(t *testing.T) {
	for _, tt := range locateTests {
		t.Run(tt.name, func(t *testing.T) {
			x := Locate(tt.doc)
			for _, w := range tt.want {
				if got, ok := x.Key(w.path); !ok || got != w.key {
					t.Errorf("Key(%s) = %v, %v; want %v, true", w.path, got, ok, w.key)
				}
				got, ok := x.Value(w.path)
				switch {
				case w.val == (Position{}) && ok:
					t.Errorf("Value(%s) = %v, true; want false", w.path, got)
				case w.val != (Position{}) && (!ok || got != w.val):
					t.Errorf("Value(%s) = %v, %v; want %v, true", w.path, got, ok, w.val)
				}
			}
			for _, p := range tt.absent {
				if got, ok := x.Key(p); ok {
					t.Errorf("Key(%s) = %v, true; want false", p, got)
				}
			}
			if t.Failed() {
				t.Logf("index: %v", dump(x))
			}
		})
	}
}

// paths returns the recorded paths of x, written canonically, with their
// entries.
func paths(x *Index) map[string]entry {
	m := make(map[string]entry)
	for n, nd := range x.nodes {
		if !nd.set {
			continue
		}
		var segs []string
		for ; n != 0; n = x.nodes[n].parent {
			segs = append(segs, x.nodes[n].seg)
		}
		var b strings.Builder
		for i, seg := range slices.Backward(segs) {
			if i < len(segs)-1 && seg[0] != '[' {
				b.WriteByte('.')
			}
			b.WriteString(seg)
		}
		m[b.String()] = nd.e
	}
	return m
}

// dump lists an index's paths and positions, for failure messages.
func dump(x *Index) string {
	var lines []string
	for p, e := range paths(x) {
		s := p + " " + e.key.String()
		if e.hasVal {
			s += " = " + e.val.String()
		}
		lines = append(lines, s)
	}
	slices.Sort(lines)
	return "\n\t" + strings.Join(lines, "\n\t")
}

func TestLocateTestsAreValid(t *testing.T) {
	for _, tt := range locateTests {
		var v any
		if _, err := toml.Decode(tt.doc, &v); err != nil {
			t.Errorf("%s: BurntSushi rejects the document: %v", tt.name, err)
		}
	}
}

func TestLocateSkipsValuesNestedTooDeep(t *testing.T) {
	const depth = maxDepth + 10
	// BurntSushi is slow on deeply nested inline tables: nest arrays.
	doc := "a = [{b = [{b = [{b = " + strings.Repeat("[", depth) + "{b = '}]'}" + strings.Repeat("]", depth) + "}]}]}]\n" +
		"c = [\n" + strings.Repeat("[", depth) + "# ]]]\n" + strings.Repeat("]", depth) + "]\nd = 1\n"
	var v any
	if _, err := toml.Decode(doc, &v); err != nil {
		t.Fatalf("BurntSushi rejects the document: %v", err)
	}
	x := Locate(doc)
	for _, w := range []loc{
		{"a[0].b[0].b[0]", at(1, 18), at(1, 18)},
		{"c", at(2, 1), at(2, 5)},
		{"c[0]", at(3, 1), at(3, 1)},
		{"d", at(5, 1), at(5, 5)},
	} {
		if got, ok := x.Key(w.path); !ok || got != w.key {
			t.Errorf("Key(%s) = %v, %v; want %v, true", w.path, got, ok, w.key)
		}
		if got, ok := x.Value(w.path); !ok || got != w.val {
			t.Errorf("Value(%s) = %v, %v; want %v, true", w.path, got, ok, w.val)
		}
	}
	deep := "a" + strings.Repeat("[0].b", 3) + strings.Repeat("[0]", depth) + ".b"
	if _, ok := x.Key(deep); ok {
		t.Errorf("Key found a value nested deeper than %d", maxDepth)
	}
}

func TestKeyAcceptsAnySpellingOfAPath(t *testing.T) {
	x := Locate("[\"fleet\".'group']\n\"a.b\" = 1\n'lit' = 2\nab = 3\n")
	for _, tt := range []struct {
		path string
		want Position
	}{
		{"fleet.group", at(1, 1)},
		{`"fleet"."group"`, at(1, 1)},
		{`'fleet'.group`, at(1, 1)},
		{`fleet.group."a.b"`, at(2, 1)},
		{`fleet.group.'a.b'`, at(2, 1)},
		{`fleet.group."lit"`, at(3, 1)},
		{`fleet.group."a\u0062"`, at(4, 1)},
	} {
		if got, ok := x.Key(tt.path); !ok || got != tt.want {
			t.Errorf("Key(%s) = %v, %v; want %v, true", tt.path, got, ok, tt.want)
		}
	}
}

const nearestDoc = `# a scenario
[fleet]
clients = 3

[[fleet.group]]
name = "a"
[[fleet.group]]
name = "b"
start = { at = "1s" }
`

func TestNearest(t *testing.T) {
	x := Locate(nearestDoc)
	for _, tt := range []struct {
		name, path string
		want       Position
		ok         bool
	}{
		{"present key", "fleet.group[1].name", at(8, 1), true},
		{"missing key falls back to its table header", "fleet.missing", at(2, 1), true},
		{"missing key in an array element falls back to the element", "fleet.group[1].clients", at(7, 1), true},
		{"missing element falls back to the array", "fleet.group[5].name", at(5, 1), true},
		{"missing key under a value falls back to the value's key", "fleet.clients.deeper", at(3, 1), true},
		{"missing key in an inline table", "fleet.group[1].start.spread", at(9, 1), true},
		{"quoted spelling", `"fleet".group[0]."name"`, at(6, 1), true},
		{"nothing matches", "nothing.here", at(1, 1), false},
		{"empty path", "", at(1, 1), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := x.Nearest(tt.path); got != tt.want || ok != tt.ok {
				t.Errorf("Nearest(%s) = %v, %v; want %v, %v", tt.path, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestNilIndexIsEmpty(t *testing.T) {
	var x *Index
	if _, ok := x.Key("a"); ok {
		t.Error("Key found a key in a nil Index")
	}
	if _, ok := x.Value("a"); ok {
		t.Error("Value found a key in a nil Index")
	}
	if got, ok := x.Nearest("a"); ok || got != at(1, 1) {
		t.Errorf("Nearest = %v, %v; want 1:1, false", got, ok)
	}
}

func TestSegments(t *testing.T) {
	for _, tt := range []struct {
		name, path string
		want       []string
	}{
		{"parts and an index", "a.b[1].c", []string{"a", "b", "[1]", "c"}},
		{"quoted part and two indexes", `a."b.c"[0][2]`, []string{"a", `"b.c"`, "[0]", "[2]"}},
		{"quoted bare keys are written bare", `"bare".'x y'`, []string{"bare", `"x y"`}},
		{"escapes are decoded", `"a\u0062"."\\"`, []string{"ab", `"\\"`}},
		{"leading zeros of an index are dropped", "a[007][0]", []string{"a", "[7]", "[0]"}},
		{"a bracket that is not an index is part of the name", "a[x]", []string{`"a[x]"`}},
		{"an empty index is part of the name", "a[]", []string{`"a[]"`}},
		{"brackets inside quotes", `"a[0]".b`, []string{`"a[0]"`, "b"}},
		{"empty part", "a..b", []string{"a", `""`, "b"}},
		{"trailing dot", "a.", []string{"a", `""`}},
		{"text right after an index", "a[0]b", []string{"a", "[0]", "b"}},
		{"unterminated basic string", `a."b.c`, []string{"a", `"b.c"`}},
		{"unterminated literal string", `a.'b.c`, []string{"a", `"b.c"`}},
		{"backslash at the end", `"a\`, []string{`"a\\"`}},
		{"empty path", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := segments(tt.path); !slices.Equal(got, tt.want) {
				t.Errorf("segments(%s) = %q; want %q", tt.path, got, tt.want)
			}
		})
	}
}

// invalidDocs are documents BurntSushi rejects; Locate must not panic on them.
var invalidDocs = []string{
	"a = ",
	"a =",
	"a",
	"= 1",
	"[a",
	"[[a]",
	"[a]]",
	"[]",
	"[[]]",
	"a = \"unterminated",
	"a = \"unterminated\\",
	"a = \"\"\"never closed",
	"a = \"\"\"never closed\\",
	"a = '''never closed",
	"a = 'x",
	"a = [1, 2",
	"a = [1 2]",
	"a = [,]",
	"a = {b = 1",
	"a = {b = 1 c = 2}",
	"a = {,}",
	"a = 1 2",
	"a.\"b = 1",
	"a. = 1",
	".a = 1",
	"\"\"\"k\"\"\" = 1",
	"a = 1\na = 2",
	"[a]\n[a]",
	"\x00\xff\xfe",
	"a = [" + strings.Repeat("[", maxDepth+10),
	"a = " + strings.Repeat("[{b = ", 50),
	"a = \"\xff\"\n\"\xff\" = 1",
}

func TestLocateInvalidDocuments(t *testing.T) {
	for _, doc := range invalidDocs {
		var v any
		if _, err := toml.Decode(doc, &v); err == nil {
			t.Errorf("BurntSushi accepts %.40q; it belongs in another test", doc)
		}
		checkIndex(t, doc, Locate(doc))
	}
}

// checkIndex checks what holds for the index of any document: positions lie
// in the document, and every recorded path is found again by Key and
// Nearest.
func checkIndex(t *testing.T, doc string, x *Index) {
	t.Helper()
	lines := strings.Count(doc, "\n") + 1
	for p, e := range paths(x) {
		pos := []Position{e.key}
		if e.hasVal {
			pos = append(pos, e.val)
		}
		for _, pos := range pos {
			if pos.Line < 1 || pos.Line > lines || pos.Col < 1 {
				t.Errorf("%.40q: %s at %v, outside the document", doc, p, pos)
			}
		}
		if len(p) > 1000 {
			continue // checking every path of a deep value takes quadratic time
		}
		if got, ok := x.Key(p); !ok || got != e.key {
			t.Errorf("%.40q: Key(%s) = %v, %v; want %v, true (path not canonical?)", doc, p, got, ok, e.key)
		}
		if got, ok := x.Nearest(p); !ok || got != e.key {
			t.Errorf("%.40q: Nearest(%s) = %v, %v; want %v, true", doc, p, got, ok, e.key)
		}
	}
}
