package tomlpos

import (
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting of arrays and inline tables whose contents
// Locate records, so that no input can exhaust the stack. Deeper values are
// skipped.
const maxDepth = 1000

// Locate scans the TOML document doc and returns the positions of its keys.
//
// Locate is meant for documents the TOML decoder accepted; on any other input
// it returns what it could make out, and it never panics. A key defined twice
// (only in an invalid document) keeps its first position.
func Locate(doc string) *Index {
	s := &scanner{
		src:    strings.TrimPrefix(doc, "\uFEFF"),
		x:      newIndex(),
		arrays: make(map[int]int),
		line:   1,
		col:    1,
	}
	s.document()
	return s.x
}

// scanner is the state of one Locate.
type scanner struct {
	src    string
	off    int // next byte of src to read
	x      *Index
	arrays map[int]int // array of tables (its node) -> its number of elements

	// pos's cursor: offset pOff is at line, col.
	pOff, line, col int
}

// pos returns the position of byte offset off. Positions are asked for in
// increasing order, so pos counts on from the last one.
func (s *scanner) pos(off int) Position {
	if off < s.pOff {
		s.pOff, s.line, s.col = 0, 1, 1
	}
	for s.pOff < off && s.pOff < len(s.src) {
		switch c := s.src[s.pOff]; {
		case c == '\n':
			s.line++
			s.col = 1
			s.pOff++
		case c < utf8.RuneSelf:
			s.col++
			s.pOff++
		default:
			_, n := utf8.DecodeRuneInString(s.src[s.pOff:])
			s.col++
			s.pOff += n
		}
	}
	return Position{Line: s.line, Col: s.col}
}

// peek returns the byte at offset s.off+i, or 0 past the end.
func (s *scanner) peek(i int) byte {
	if s.off+i < len(s.src) {
		return s.src[s.off+i]
	}
	return 0
}

// document scans the top level: comments, table headers and key/value pairs.
func (s *scanner) document() {
	table := 0 // the current table's node
	for s.off < len(s.src) {
		switch s.src[s.off] {
		case ' ', '\t', '\r', '\n':
			s.off++
		case '#':
			s.skipLine()
		case '[':
			if t, ok := s.header(); ok {
				table = t
			}
			s.skipLine()
		default:
			s.keyval(table, 0)
			s.skipLine()
		}
	}
}

// skipLine skips past the end of the current line. In a valid document what
// it skips after a header or a key/value pair is blanks and a comment.
func (s *scanner) skipLine() {
	if i := strings.IndexByte(s.src[s.off:], '\n'); i >= 0 {
		s.off += i + 1
	} else {
		s.off = len(s.src)
	}
}

// skipBlanks skips spaces and tabs.
func (s *scanner) skipBlanks() {
	for s.off < len(s.src) && (s.src[s.off] == ' ' || s.src[s.off] == '\t') {
		s.off++
	}
}

// skipSpace skips blanks, line ends and comments, as arrays and (since TOML
// 1.1) inline tables allow between their elements.
func (s *scanner) skipSpace() {
	for s.off < len(s.src) {
		switch s.src[s.off] {
		case ' ', '\t', '\r', '\n':
			s.off++
		case '#':
			s.skipLine()
		default:
			return
		}
	}
}

// header scans a table header [a.b] or [[a.b]] and returns the node of the
// table it opens.
func (s *scanner) header() (int, bool) {
	start := s.off
	s.off++
	array := s.peek(0) == '['
	if array {
		s.off++
	}
	s.skipBlanks()
	parts, ok := s.key()
	if !ok || s.peek(0) != ']' || array && s.peek(1) != ']' {
		return 0, false
	}
	s.off++
	if array {
		s.off++
	}

	p := s.pos(start)
	path := 0
	for i, part := range parts {
		path = s.x.join(path, part)
		if i == len(parts)-1 {
			break
		}
		s.x.add(path, entry{key: p, implicit: true})
		if n, ok := s.arrays[path]; ok {
			path = s.x.index(path, n-1)
			s.x.add(path, entry{key: p, implicit: true})
		}
	}
	if array {
		s.x.add(path, entry{key: p})
		n := s.arrays[path]
		s.arrays[path] = n + 1
		path = s.x.index(path, n)
	}
	s.x.add(path, entry{key: p})
	return path, true
}

// key scans a key, bare, quoted or dotted, and the blanks after it, and
// returns its parts.
func (s *scanner) key() ([]string, bool) {
	var parts []string
	for {
		var part string
		switch s.peek(0) {
		case '"', '\'':
			p, ok := s.keyString()
			if !ok {
				return nil, false
			}
			part = p
		default:
			start := s.off
			for s.off < len(s.src) && isKeyChar(s.src[s.off]) {
				s.off++
			}
			if s.off == start {
				return nil, false
			}
			part = s.src[start:s.off]
		}
		parts = append(parts, part)
		s.skipBlanks()
		if s.peek(0) != '.' {
			return parts, true
		}
		s.off++
		s.skipBlanks()
	}
}

// isKeyChar reports whether c may be part of a bare key. It accepts more
// than TOML does, which is harmless for documents that are valid.
func isKeyChar(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '.', '=', '[', ']', '{', '}', '"', '\'', '#', ',':
		return false
	}
	return true
}

// keyString scans a quoted key part, a basic or a literal string, and
// returns its value.
func (s *scanner) keyString() (string, bool) {
	q := s.src[s.off]
	start := s.off + 1
	if !s.skipString() || s.off-start < 1 {
		return "", false
	}
	v := s.src[start : s.off-1]
	if q == '"' {
		v = unescape(v)
	}
	return v, true
}

// keyval scans a key/value pair in table (a node) and records its key, the
// tables its dotted key defines, and its value.
func (s *scanner) keyval(table, depth int) bool {
	start := s.off
	parts, ok := s.key()
	if !ok || s.peek(0) != '=' {
		return false
	}
	s.off++
	s.skipBlanks()

	kp := s.pos(start)
	path := table
	for i, part := range parts {
		path = s.x.join(path, part)
		if i < len(parts)-1 {
			s.x.add(path, entry{key: kp, implicit: true})
		}
	}
	s.x.add(path, entry{key: kp, val: s.pos(s.off), hasVal: true})
	return s.value(path, depth)
}

// value scans the value of the key at path (a node) and records what it
// holds.
func (s *scanner) value(path, depth int) bool {
	if s.off >= len(s.src) {
		return false
	}
	switch s.src[s.off] {
	case '"', '\'':
		return s.skipString()
	case '[', '{':
		if depth >= maxDepth {
			return s.skipNested()
		}
		if s.src[s.off] == '[' {
			return s.array(path, depth+1)
		}
		return s.inlineTable(path, depth+1)
	}
	return s.scalar()
}

// skipNested skips an array or inline table nested too deep to record,
// without recursion: it counts brackets and braces, skipping strings and
// comments.
func (s *scanner) skipNested() bool {
	depth := 0
	for s.off < len(s.src) {
		switch s.src[s.off] {
		case '[', '{':
			depth++
			s.off++
		case ']', '}':
			depth--
			s.off++
			if depth == 0 {
				return true
			}
		case '"', '\'':
			if !s.skipString() {
				return false
			}
		case '#':
			s.skipLine()
		default:
			s.off++
		}
	}
	return false
}

// array scans an array value and records its elements.
func (s *scanner) array(path, depth int) bool {
	s.off++ // [
	for i := 0; ; i++ {
		s.skipSpace()
		if s.peek(0) == ']' {
			s.off++
			return true
		}
		elem := s.x.index(path, i)
		p := s.pos(s.off)
		s.x.add(elem, entry{key: p, val: p, hasVal: true})
		if !s.value(elem, depth) {
			return false
		}
		s.skipSpace()
		switch s.peek(0) {
		case ',':
			s.off++
		case ']':
			s.off++
			return true
		default:
			return false
		}
	}
}

// inlineTable scans an inline table and records its keys.
func (s *scanner) inlineTable(path, depth int) bool {
	s.off++ // {
	for {
		s.skipSpace()
		if s.peek(0) == '}' {
			s.off++
			return true
		}
		if !s.keyval(path, depth) {
			return false
		}
		s.skipSpace()
		switch s.peek(0) {
		case ',':
			s.off++
		case '}':
			s.off++
			return true
		default:
			return false
		}
	}
}

// skipString skips a basic, literal, multi-line basic or multi-line literal
// string.
func (s *scanner) skipString() bool {
	q := s.src[s.off]
	if s.peek(1) == q && s.peek(2) == q {
		// Multi-line: up to the first unescaped run of three quotes or
		// more; up to two of them can belong to the string.
		for s.off += 3; s.off < len(s.src); {
			switch s.src[s.off] {
			case '\\':
				if q == '"' {
					s.off++ // the escaped character, which may be a quote
				}
				s.off++
			case q:
				if s.peek(1) == q && s.peek(2) == q {
					for s.off < len(s.src) && s.src[s.off] == q {
						s.off++
					}
					return true
				}
				s.off++
			default:
				s.off++
			}
		}
		s.off = len(s.src)
		return false
	}
	for s.off++; s.off < len(s.src); {
		switch s.src[s.off] {
		case '\\':
			if q == '"' {
				s.off++
			}
			s.off++
		case q:
			s.off++
			return true
		case '\n':
			return false
		default:
			s.off++
		}
	}
	s.off = len(s.src)
	return false
}

// scalar skips a number, a boolean, or a date and time.
func (s *scanner) scalar() bool {
	start := s.off
	s.skipScalar()
	// A date and time may be separated by a space: 1979-05-27 07:32:00.
	if isDate(s.src[start:s.off]) && s.peek(0) == ' ' && isDigit(s.peek(1)) {
		s.off++
		s.skipScalar()
	}
	return s.off > start
}

func (s *scanner) skipScalar() {
	for s.off < len(s.src) {
		switch s.src[s.off] {
		case ' ', '\t', '\r', '\n', ',', ']', '}', '#', '[', '{', '=', '"', '\'':
			return
		}
		s.off++
	}
}

// isDate reports whether v is a date, YYYY-MM-DD.
func isDate(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if i != 4 && i != 7 && !isDigit(v[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
