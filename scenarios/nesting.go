package scenarios

import "github.com/xdssim/xdssim/scenarios/internal/tomlpos"

// maxNesting is how deep arrays and inline tables may nest in a scenario.
// The schema needs four levels at most; the TOML parser's memory grows
// with the square of the depth, so a few kilobytes of "{a={a={..." would
// exhaust it.
const maxNesting = 32

// checkNesting reports whether no array or inline table of doc nests more
// than maxNesting deep; when one does, pos is where it opens. Strings and
// comments are skipped; table headers ([a], [[a]]) open and close on their
// line and count like arrays.
func checkNesting(doc string) (pos tomlpos.Position, ok bool) {
	depth := 0
	line, col := 1, 0
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		col++
		switch c {
		case '\n':
			line, col = line+1, 0
		case '#':
			for i+1 < len(doc) && doc[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			end := skipTOMLString(doc, i)
			for _, d := range doc[i+1 : end] {
				if d == '\n' {
					line, col = line+1, 0
				} else {
					col++
				}
			}
			i = end - 1
		case '[', '{':
			depth++
			if depth > maxNesting {
				return tomlpos.Position{Line: line, Col: col}, false
			}
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return tomlpos.Position{}, true
}

// skipTOMLString returns the offset just after the string that opens at
// doc[i] (a basic, literal or multi-line string), or len(doc) when it is
// not closed.
func skipTOMLString(doc string, i int) int {
	q := doc[i]
	if i+2 < len(doc) && doc[i+1] == q && doc[i+2] == q {
		delim := string([]byte{q, q, q})
		for j := i + 3; j < len(doc); j++ {
			if q == '"' && doc[j] == '\\' {
				j++
				continue
			}
			if j+3 <= len(doc) && doc[j:j+3] == delim {
				// A closing delimiter may carry one or two more quotes.
				k := j + 3
				for k < len(doc) && k < j+5 && doc[k] == q {
					k++
				}
				return k
			}
		}
		return len(doc)
	}
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			if q == '"' {
				j++
			}
		case q:
			return j + 1
		case '\n':
			return j // unterminated: the parser reports it
		}
	}
	return len(doc)
}
