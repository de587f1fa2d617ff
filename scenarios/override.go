package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/xdssim/xdssim/model/xdsclient"
)

// applyOverride sets one --set key=value into the parsed document tree, so
// that it is decoded and validated like the file. Problems are recorded
// against the override.
func applyOverride(p *problems, tree map[string]any, arg string) {
	fail := func(format string, args ...any) {
		p.errs = append(p.errs, &Error{File: p.file, Override: arg, Msg: fmt.Sprintf(format, args...)})
	}
	key, raw, ok := strings.Cut(arg, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" || key == "+" {
		fail("expected key=value, such as fleet.group[0].clients=500")
		return
	}
	if k, add := strings.CutSuffix(key, "+"); add {
		appendOverride(p, tree, arg, strings.TrimSpace(k), raw)
		return
	}
	parts, err := splitPath(key)
	if err != nil {
		fail("malformed key %q: %v", key, err)
		return
	}
	val, err := parseValue(raw)
	if err != nil {
		fail("%v", err)
		return
	}

	var path string
	node := tree
	for i, part := range parts {
		last := i == len(parts)-1
		path = joinPath(path, part.key)
		cur, exists := node[part.key]
		if part.index < 0 {
			if last {
				node[part.key] = val
				p.overrides[path] = arg
				return
			}
			if !exists {
				m := map[string]any{}
				node[part.key] = m
				node = m
				continue
			}
			m, isTable := cur.(map[string]any)
			if !isTable {
				if _, isArray := cur.([]map[string]any); isArray {
					fail("%s is an array of tables: name an element, such as %s[0]", path, path)
				} else {
					fail("%s is not a table", path)
				}
				return
			}
			node = m
			continue
		}
		arr, isArray := cur.([]map[string]any)
		if !isArray {
			fail("%s is not an array of tables", path)
			return
		}
		if part.index >= len(arr) {
			fail("%s has %d elements; index %d is out of range", path, len(arr), part.index)
			return
		}
		path = fmt.Sprintf("%s[%d]", path, part.index)
		if last {
			m, isTable := val.(map[string]any)
			if !isTable {
				fail("%s is a table: set one of its keys, such as %s.name", path, path)
				return
			}
			arr[part.index] = m
			p.overrides[path] = arg
			return
		}
		node = arr[part.index]
	}
}

// appendOverride appends the table raw to the array of tables at key
// (--add fault={...}, given to Parse as "fault+={...}"), creating the
// array when the scenario has none; the element is decoded and validated
// like the file's, its problems recorded against the addition.
func appendOverride(p *problems, tree map[string]any, arg, key, raw string) {
	fail := func(format string, args ...any) {
		p.errs = append(p.errs, &Error{File: p.file, Override: arg, Msg: fmt.Sprintf(format, args...)})
	}
	parts, err := splitPath(key)
	if err != nil {
		fail("malformed key %q: %v", key, err)
		return
	}
	if parts[len(parts)-1].index >= 0 {
		fail("--add appends to an array of tables: name the array, such as fault, not an element")
		return
	}
	val, err := parseValue(raw)
	if err != nil {
		fail("%v", err)
		return
	}
	elem, ok := val.(map[string]any)
	if !ok {
		fail("expected an inline table to append to %s, such as {kind = \"server-down\", at = \"1m\"}", key)
		return
	}
	var path string
	node := tree
	for _, part := range parts[:len(parts)-1] {
		path = joinPath(path, part.key)
		cur := node[part.key]
		if part.index >= 0 {
			arr, isArray := cur.([]map[string]any)
			if !isArray || part.index >= len(arr) {
				fail("%s has no element %d", path, part.index)
				return
			}
			path = fmt.Sprintf("%s[%d]", path, part.index)
			node = arr[part.index]
			continue
		}
		m, isTable := cur.(map[string]any)
		if cur == nil {
			m, isTable = map[string]any{}, true
			node[part.key] = m
		}
		if !isTable {
			fail("%s is not a table", path)
			return
		}
		node = m
	}
	last := parts[len(parts)-1].key
	path = joinPath(path, last)
	var arr []map[string]any
	switch cur := node[last].(type) {
	case nil:
	case []map[string]any:
		arr = cur
	default:
		fail("%s is not an array of tables", path)
		return
	}
	node[last] = append(arr, elem)
	p.overrides[fmt.Sprintf("%s[%d]", path, len(arr))] = arg
}

// parseValue reads an override's value as TOML; what is not a valid TOML
// value is taken as a plain string. The value must be one value: what
// follows it on another line (a second key = value) would otherwise be
// dropped without a word.
func parseValue(raw string) (any, error) {
	raw = strings.TrimSpace(raw)
	var doc map[string]any
	if _, err := toml.Decode("V = "+raw, &doc); err == nil {
		if len(doc) != 1 {
			return nil, fmt.Errorf("expected one value after '=', found more on the lines after it (give each key its own --set)")
		}
		return doc["V"], nil
	}
	if strings.ContainsAny(raw, "\n\r") {
		return nil, fmt.Errorf("expected one value after '=', found a line break in %q (a multi-line string is written \"\"\"...\"\"\")", raw)
	}
	return raw, nil
}

type pathPart struct {
	key   string
	index int // -1: no index
}

// splitPath splits a key path such as fleet.group[0]."odd.key" into parts.
func splitPath(s string) ([]pathPart, error) {
	var parts []pathPart
	for len(s) > 0 {
		var key string
		if s[0] == '"' {
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, fmt.Errorf("unterminated quoted key")
			}
			k, err := strconv.Unquote(s[:end+1])
			if err != nil {
				return nil, fmt.Errorf("bad quoted key %s", s[:end+1])
			}
			key, s = k, s[end+1:]
		} else {
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			key, s = s[:end], s[end:]
			if !isBareKey(key) {
				return nil, fmt.Errorf("%q is not a key (letters, digits, '_' and '-', or a quoted key)", key)
			}
		}
		part := pathPart{key: key, index: -1}
		if strings.HasPrefix(s, "[") {
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("unterminated index")
			}
			n, err := strconv.Atoi(s[1:end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("index %q is not a non-negative integer", s[1:end])
			}
			part.index, s = n, s[end+1:]
		}
		parts = append(parts, part)
		if s == "" {
			break
		}
		if s[0] != '.' {
			return nil, fmt.Errorf("expected '.' before %q", s)
		}
		s = s[1:]
		if s == "" {
			return nil, fmt.Errorf("ends with '.'")
		}
	}
	return parts, nil
}

// ProfileComment lists, as TOML comments, every field of each group's
// XdsClient profile as the group's clients run it, the profile's own
// values with the group's profile_fields applied: what `xdssim validate`
// prints after the resolved scenario, so that a user sees the ADS backoff
// and the timers a group really has.
func (s *Scenario) ProfileComment() string {
	cfg := s.FleetConfig()
	var b strings.Builder
	for _, g := range cfg.Groups {
		if len(g.Servers) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n# group %s runs the %s profile: every field as its clients run it\n# (profile_fields.<name> overrides one; docs/model-fidelity.md, Profiles):\n", g.Name, g.Profile.Name)
		for _, f := range xdsclient.FieldNames() {
			v, err := g.Profile.Field(f)
			if err != nil {
				continue
			}
			fmt.Fprintf(&b, "#   %s = %s\n", f, strconv.Quote(v))
		}
	}
	return b.String()
}
