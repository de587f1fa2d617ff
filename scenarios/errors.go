package scenarios

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/xdssim/xdssim/scenarios/internal/tomlpos"
)

// An Error is one problem with a scenario: where it is, which key, and what
// was expected.
type Error struct {
	// File is the scenario's file name, or the library name it came from.
	File string
	// Pos is where the problem stands in File. It is zero when the problem
	// is not in the file but in an override (then Override is set).
	Pos tomlpos.Position
	// Override is the --set argument the problem comes from, if any.
	Override string
	// Key is the dotted key path ("fleet.group[0].clients"); empty for
	// problems with the document as a whole.
	Key string
	// Msg says what was expected and what was found.
	Msg string
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.Override != "":
		flag, arg := OverrideFlag(e.Override)
		fmt.Fprintf(&b, "%s %s", flag, arg)
	case e.Pos.Line > 0:
		fmt.Fprintf(&b, "%s:%d:%d", e.File, e.Pos.Line, e.Pos.Col)
	default:
		b.WriteString(e.File)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found in one scenario, in the order they stand
// in the file (overrides last). Loading reports them all at once, not only
// the first.
type ErrorList []*Error

func (l ErrorList) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

func (l ErrorList) sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if (a.Override != "") != (b.Override != "") {
			return a.Override == ""
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		return a.Pos.Col < b.Pos.Col
	})
}

// problems collects the errors of one load. Each error is recorded against
// a key path; its position is found when the load ends, from the document's
// key index, or from the --set argument that gave the key its value.
type problems struct {
	file      string
	index     *tomlpos.Index
	overrides map[string]string // key path -> the --set argument that set it
	errs      ErrorList
	// warns are what a load reports without failing: the keys of an
	// older format whose meaning changed (format.go).
	warns ErrorList
	bad   map[string]bool // key paths that failed to decode
	// tree is the document with the overrides applied: a key is given
	// when it stands in it.
	tree map[string]any
}

// keyError records a problem with the key itself (an unknown key): it
// points at the key.
func (p *problems) keyError(path, format string, args ...any) {
	p.add(path, true, fmt.Sprintf(format, args...))
}

// valueError records a problem with a key's value: it points at the value.
func (p *problems) valueError(path, format string, args ...any) {
	p.add(path, false, didYouMean(fmt.Sprintf(format, args...)))
}

// enumMessage matches a message that lists the values a key takes and
// the one it found: "expected one of: a, b, c, found "x"" or "expected a,
// b or c, found "x"".
var enumMessage = regexp.MustCompile(`expected (?:one of: )?([^"]+?),? found "([^"]*)"$`)

// didYouMean adds to a message that lists a key's values the one the
// value found was probably meant to be: found "server-dwn" among
// server-down, server-restart, … says did you mean "server-down"?
func didYouMean(msg string) string {
	m := enumMessage.FindStringSubmatch(msg)
	if m == nil || m[2] == "" {
		return msg
	}
	var options []string
	for _, part := range strings.Split(strings.ReplaceAll(m[1], " or ", ", "), ",") {
		if o := strings.TrimSpace(part); o != "" && !strings.ContainsAny(o, " ()") {
			options = append(options, o)
		}
	}
	if len(options) < 2 {
		return msg
	}
	if best, ok := nearest(m[2], options, max(2, len(m[2])/4)); ok && best != m[2] {
		return msg + fmt.Sprintf("; did you mean %q?", best)
	}
	return msg
}

func (p *problems) add(path string, atKey bool, msg string) {
	p.errs = append(p.errs, p.locate(path, atKey, msg))
}

// locate makes msg about the key path an Error: at the key (atKey) or its
// value in the file, or at the --set that gave it.
func (p *problems) locate(path string, atKey bool, msg string) *Error {
	e := &Error{File: p.file, Key: path, Msg: msg}
	if o, ok := p.override(path); ok {
		e.Override = o
	} else if o, ok := p.overrideWithin(path); ok && !atKey {
		e.Override = o
	} else if p.index != nil {
		e.Pos = p.position(path, atKey)
	}
	return e
}

// hasErrorsOutside reports whether a problem has been recorded for a key
// that is not key nor under it ("expect": expect[0].metric is under it), or
// for no key at all.
func (p *problems) hasErrorsOutside(key string) bool {
	for _, e := range p.errs {
		k := e.Key
		for parent := parentPath(k); parent != ""; parent = parentPath(parent) {
			k = parent
		}
		if k != key {
			return true
		}
	}
	return false
}

// override reports the --set argument that set path or one of its parents.
func (p *problems) override(path string) (string, bool) {
	for q := path; q != ""; q = parentPath(q) {
		if o, ok := p.overrides[q]; ok {
			return o, true
		}
	}
	return "", false
}

// overrideWithin reports the --set argument that set a key under path, so
// that a problem with a table as a whole (fleet.group: too many clients in
// all) that an override caused points at the override, not at the file.
// With several, the first of the sorted keys wins.
func (p *problems) overrideWithin(path string) (string, bool) {
	best := ""
	for k := range p.overrides {
		if path != "" && (strings.HasPrefix(k, path+".") || strings.HasPrefix(k, path+"[")) {
			if best == "" || k < best {
				best = k
			}
		}
	}
	if best == "" {
		return "", false
	}
	return p.overrides[best], true
}

func (p *problems) position(path string, atKey bool) tomlpos.Position {
	if !atKey {
		if pos, ok := p.index.Value(path); ok {
			return pos
		}
	}
	if pos, ok := p.index.Key(path); ok {
		return pos
	}
	pos, _ := p.index.Nearest(path)
	return pos
}

// parentPath drops the last part of a key path: "a.b[2].c" -> "a.b[2]",
// "a.b[2]" -> "a.b", "a" -> "".
func parentPath(path string) string {
	inQuote := false
	cut := -1
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '"':
			inQuote = !inQuote
		case c == '\\' && inQuote:
			i++
		case !inQuote && (c == '.' || c == '['):
			cut = i
		}
	}
	if cut < 0 {
		return ""
	}
	return path[:cut]
}
