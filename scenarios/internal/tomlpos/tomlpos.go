// Package tomlpos finds where keys stand in a TOML document, so that a
// problem found after decoding can be reported as file:line:col.
//
// The TOML decoder (github.com/BurntSushi/toml) keeps no positions for keys;
// Locate scans the document a second time and records, for every key path,
// where the key and its value start.
//
// # Key paths
//
// A key path names a key the way the rest of xdssim does: its parts are
// joined by '.', and a part that is not a bare key (it is empty, or holds a
// character other than A-Z, a-z, 0-9, '_' and '-') is written as a TOML
// basic string: a."b.c".d. An element of an array, whether an array of
// tables or an array value, is named by its index from 0:
// fleet.group[1].clients, tags[0], matrix[1][0].
//
// Locate records:
//
//   - every key of a key/value pair, inline tables included: Key is where the
//     key starts as written (the first character of a.b.c in a.b.c = 1), Value
//     where its value starts;
//   - every element of an array value: Key and Value are both where the
//     element starts;
//   - every table header: [t] records t at its '[', and the Nth [[t]] (from 0)
//     records t[N] at its first '[', and t itself at the first [[t]]; these
//     have no Value;
//   - the tables a header or a dotted key defines implicitly ([a.b.c] defines
//     a and a.b; x.y.z = 1 defines x and x.y), at the header or key that first
//     defines them, unless the document defines them explicitly.
//
// A header names a sub-table of the last element of an array of tables, as
// TOML does: after two [[fleet.group]], [fleet.group.start] records
// fleet.group[1].start.
//
// # Positions
//
// Lines are separated by "\n" (a "\r" before it is not counted); columns count
// characters (runes, an invalid UTF-8 byte counting as one), from 1; a tab is
// one character. A UTF-8 byte order mark at the start of the document is not
// counted.
package tomlpos

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Position is a 1-based line and column in a document. The column counts
// characters (runes), not bytes.
type Position struct {
	Line, Col int
}

// String returns the position as "line:col".
func (p Position) String() string {
	return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
}

// Index maps the key paths of a TOML document to where they stand in it.
// Create one with [Locate]. A nil *Index is empty.
type Index struct {
	// The paths form a tree: nodes[0] is the root, and every other node is
	// a path, its parent's path followed by one part or one index.
	nodes []node
	kids  map[child]int
}

type node struct {
	parent int
	seg    string // the last part, written as in a canonical path, or "[i]"
	e      entry
	set    bool // e has been recorded
}

// child names a node by its parent and its last part.
type child struct {
	parent int
	seg    string
}

type entry struct {
	key      Position
	val      Position
	hasVal   bool
	implicit bool // a table defined only by a header or dotted key below it
}

func newIndex() *Index {
	return &Index{nodes: make([]node, 1), kids: make(map[child]int)}
}

// child returns the node of path parent followed by seg, creating it if need
// be.
func (x *Index) child(parent int, seg string) int {
	c := child{parent, seg}
	if n, ok := x.kids[c]; ok {
		return n
	}
	x.nodes = append(x.nodes, node{parent: parent, seg: seg})
	x.kids[c] = len(x.nodes) - 1
	return len(x.nodes) - 1
}

// join returns the node of path parent followed by the key part name.
func (x *Index) join(parent int, name string) int { return x.child(parent, quote(name)) }

// index returns the node of element i of the array at path parent.
func (x *Index) index(parent, i int) int { return x.child(parent, "["+strconv.Itoa(i)+"]") }

// add records e at node n. An explicit definition replaces an implicit one;
// otherwise the first definition stays.
func (x *Index) add(n int, e entry) {
	if nd := &x.nodes[n]; !nd.set || nd.e.implicit && !e.implicit {
		nd.e, nd.set = e, true
	}
}

// find walks path from the root and returns the entry of the deepest node on
// it that has one, and whether that node is the whole path.
func (x *Index) find(path string) (e entry, whole, ok bool) {
	if x == nil {
		return entry{}, false, false
	}
	segs := segments(path)
	n := 0
	for i, seg := range segs {
		var found bool
		if n, found = x.kids[child{n, seg}]; !found {
			break
		}
		if x.nodes[n].set {
			e, whole, ok = x.nodes[n].e, i == len(segs)-1, true
		}
	}
	return e, whole, ok
}

// Key returns where the key at path starts: the first character of the whole
// key as written (for fleet.clients = 3, the 'f'), the '[' of a table header,
// or the first character of an array element. The path need not be written
// canonically ("a" and a name the same part). Key reports false if the
// document has no such key.
func (x *Index) Key(path string) (Position, bool) {
	e, whole, _ := x.find(path)
	if !whole {
		return Position{}, false
	}
	return e.key, true
}

// Value returns where the value of the key at path starts: the first
// character after the '=' and the blanks that follow it, or the first
// character of an array element. Value reports false if the document has no
// such key, or if the key has no value of its own: a table header, or a table
// only implied by a header or a dotted key.
func (x *Index) Value(path string) (Position, bool) {
	e, whole, _ := x.find(path)
	if !whole || !e.hasVal {
		return Position{}, false
	}
	return e.val, true
}

// Nearest returns where the longest present prefix of path starts, as Key
// would, so that a problem with a missing key can point at the table that
// should hold it. Prefixes end before a '.' or an index: the prefixes of
// a.b[1].c are a.b[1].c, a.b[1], a.b and a. If no prefix is present,
// Nearest returns Position{1, 1} and false.
func (x *Index) Nearest(path string) (Position, bool) {
	e, _, ok := x.find(path)
	if !ok {
		return Position{Line: 1, Col: 1}, false
	}
	return e.key, true
}

// segments parses a key path into its parts and indexes, each written as in
// a canonical path: a part bare or quoted as quote does, an index "[i]".
// It accepts any string: an unterminated quoted part runs to the end of the
// path, and a '[' that does not start an index [digits] is part of a name.
func segments(path string) []string {
	if path == "" {
		return nil
	}
	var segs []string
	for i := 0; ; {
		// A part: pieces of bare and quoted text up to a '.' or an index.
		var name strings.Builder
		for i < len(path) && path[i] != '.' && indexAt(path, i) < 0 {
			switch path[i] {
			case '"':
				j := i + 1
				for j < len(path) && path[j] != '"' {
					if path[j] == '\\' {
						j++
					}
					j++
				}
				name.WriteString(unescape(path[i+1 : min(j, len(path))]))
				i = min(j+1, len(path))
			case '\'':
				j := strings.IndexByte(path[i+1:], '\'')
				if j < 0 {
					j = len(path) - i - 1
				}
				name.WriteString(path[i+1 : i+1+j])
				i = min(i+2+j, len(path))
			default:
				j := i
				for j < len(path) && path[j] != '.' && path[j] != '"' && path[j] != '\'' &&
					(path[j] != '[' || indexAt(path, j) < 0) {
					j++
				}
				name.WriteString(path[i:j])
				i = j
			}
		}
		segs = append(segs, quote(name.String()))
		for {
			end := indexAt(path, i)
			if end < 0 {
				break
			}
			seg := path[i:end]
			if path[i+1] == '0' && end-i > 3 {
				// Written canonically: without leading zeros.
				n := strings.TrimLeft(path[i+1:end-1], "0")
				if n == "" {
					n = "0"
				}
				seg = "[" + n + "]"
			}
			segs = append(segs, seg)
			i = end
		}
		switch {
		case i >= len(path):
			return segs
		case path[i] == '.':
			i++
		}
		// Otherwise text follows an index directly: read it as the next part.
	}
}

// indexAt reports whether path[i:] starts with an index "[digits]" and, if so,
// returns the offset just past its ']'; otherwise it returns -1.
func indexAt(path string, i int) int {
	if i >= len(path) || path[i] != '[' {
		return -1
	}
	j := i + 1
	for j < len(path) && '0' <= path[j] && path[j] <= '9' {
		j++
	}
	if j == i+1 || j >= len(path) || path[j] != ']' {
		return -1
	}
	return j + 1
}

// quote returns the key part name as written in a canonical path: bare if it
// is a valid bare key, else a basic string, escaped as BurntSushi's
// toml.Key.String escapes it.
func quote(name string) string {
	bare := name != ""
	for i := 0; i < len(name) && bare; i++ {
		bare = isBare(name[i])
	}
	if bare {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c == 0x7f {
				const hex = "0123456789abcdef"
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			} else {
				b.WriteByte(c) // including the bytes of other characters, as they are
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// isBare reports whether c may appear in a bare key.
func isBare(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// unescape decodes the escapes of a TOML basic string's content s. An escape
// that is not valid is kept as written.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		n := 0 // hex digits that follow
		switch s[i+1] {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte('\x1b')
		case '"', '\\':
			b.WriteByte(s[i+1])
		case 'x':
			n = 2
		case 'u':
			n = 4
		case 'U':
			n = 8
		default:
			b.WriteByte('\\')
			i++
			continue
		}
		if n == 0 {
			i += 2
			continue
		}
		v, err := strconv.ParseUint(s[i+2:min(i+2+n, len(s))], 16, 32)
		if err != nil || i+2+n > len(s) {
			b.WriteByte('\\')
			i++
			continue
		}
		if v > utf8.MaxRune {
			v = utf8.RuneError
		}
		b.WriteRune(rune(v))
		i += 2 + n
	}
	return b.String()
}
