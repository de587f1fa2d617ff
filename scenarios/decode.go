package scenarios

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The strict decoder. BurntSushi/toml parses the document into plain values
// (map[string]any and friends); this walker then fills the typed schema from
// them, field by field, against the `toml` tags. Doing the typing here rather
// than in toml.Decode lets one pass report every problem in the file, not
// only the first, and enforce what toml.Decode allows: keys are matched
// exactly (toml.Decode matches case-insensitively), a key the schema does not
// have is an error, and durations must be strings ("15s"): a bare integer
// would otherwise be read as nanoseconds.

var durationType = reflect.TypeFor[time.Duration]()

// defaulter is implemented by schema types whose zero value is not their
// default. The decoder calls setDefaults on every value it creates before
// filling it, so a key left out keeps its default.
type defaulter interface{ setDefaults() }

type decoder struct{ p *problems }

// table fills the struct v from the TOML table m found at path.
func (d *decoder) table(path string, m map[string]any, v reflect.Value) {
	fields := schemaFields(v.Type())
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sub := joinPath(path, k)
		f, ok := fields.byName[k]
		if !ok {
			d.p.keyError(sub, "unknown key%s", suggest(k, fields.names))
			d.p.bad[sub] = true
			continue
		}
		x := m[k]
		if fields.scalar[k] {
			x = tomlScalarText(x)
		}
		d.value(sub, x, v.Field(f))
	}
}

// value fills v from the TOML value x found at path.
func (d *decoder) value(path string, x any, v reflect.Value) {
	ok := true
	switch t := v.Type(); {
	case t == durationType:
		ok = d.duration(path, x, v)
	case t.Kind() == reflect.String:
		var s string
		if s, ok = x.(string); ok {
			v.SetString(s)
		} else {
			d.mismatch(path, "a string", x)
		}
	case t.Kind() == reflect.Bool:
		var b bool
		if b, ok = x.(bool); ok {
			v.SetBool(b)
		} else {
			d.mismatch(path, "true or false", x)
		}
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64:
		var n int64
		if n, ok = x.(int64); ok {
			v.SetInt(n)
		} else if tooBig(x) {
			d.p.valueError(path, "expected an integer from %d to %d, found %s", int64(math.MinInt64), int64(math.MaxInt64), x)
		} else {
			d.mismatch(path, "an integer", x)
		}
	case t.Kind() == reflect.Uint64:
		n, isInt := x.(int64)
		switch {
		case !isInt && tooBig(x):
			ok = false
			d.p.valueError(path, "expected an integer from 0 to %d, found %s", int64(math.MaxInt64), x)
		case !isInt:
			ok = false
			d.mismatch(path, "a non-negative integer", x)
		case n < 0:
			ok = false
			d.p.valueError(path, "expected a non-negative integer, found %d", n)
		default:
			v.SetUint(uint64(n))
		}
	case t.Kind() == reflect.Float64:
		switch n := x.(type) {
		case float64:
			if math.IsNaN(n) || math.IsInf(n, 0) {
				ok = false
				d.p.valueError(path, "expected a finite number, found %v", n)
			} else {
				v.SetFloat(n)
			}
		case int64:
			v.SetFloat(float64(n))
		default:
			ok = false
			d.mismatch(path, "a number", x)
		}
	case t.Kind() == reflect.Pointer:
		// An optional value: nil when the key is left out, so that "not
		// given" differs from every value (expect[].min = 0 is a bound).
		e := reflect.New(t.Elem())
		if df, isDefaulter := e.Interface().(defaulter); isDefaulter {
			df.setDefaults()
		}
		d.value(path, x, e.Elem())
		if ok = !d.p.bad[path]; ok {
			v.Set(e)
		}
	case t.Kind() == reflect.Struct:
		var m map[string]any
		if m, ok = x.(map[string]any); ok {
			d.table(path, m, v)
		} else {
			d.mismatch(path, "a table", x)
		}
	case t.Kind() == reflect.Slice:
		ok = d.slice(path, x, v)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String:
		ok = d.stringMap(path, x, v)
	default:
		panic(fmt.Sprintf("scenarios: schema field %s has unsupported type %s", path, t))
	}
	if !ok {
		d.p.bad[path] = true
	}
}

func (d *decoder) duration(path string, x any, v reflect.Value) bool {
	s, ok := x.(string)
	if !ok {
		if n, isInt := x.(int64); isInt {
			d.p.valueError(path, "expected a duration string such as \"%ds\" (a bare integer has no unit), found %d", n, n)
		} else {
			d.mismatch(path, "a duration string such as \"15s\"", x)
		}
		return false
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		d.p.valueError(path, "expected a duration such as \"15s\", \"500ms\" or \"2m30s\", found %q", s)
		return false
	}
	if dur > maxDuration || dur < -maxDuration {
		d.p.valueError(path, "expected a duration of at most %s (30 days), found %q", maxDuration, s)
		return false
	}
	v.SetInt(int64(dur))
	return true
}

// slice fills v from an array: an array of tables ([[x]] or [{...}, {...}])
// for a slice of structs, an array of values otherwise.
func (d *decoder) slice(path string, x any, v reflect.Value) bool {
	var items []any
	switch a := x.(type) {
	case []map[string]any:
		items = make([]any, len(a))
		for i := range a {
			items[i] = a[i]
		}
	case []any:
		items = a
	default:
		d.mismatch(path, "an array", x)
		return false
	}
	elem := v.Type().Elem()
	out := reflect.MakeSlice(v.Type(), len(items), len(items))
	for i, it := range items {
		e := out.Index(i)
		if df, ok := e.Addr().Interface().(defaulter); ok {
			df.setDefaults()
		}
		if elem.Kind() == reflect.Struct && elem != durationType {
			m, ok := it.(map[string]any)
			if !ok {
				d.mismatch(fmt.Sprintf("%s[%d]", path, i), "a table", it)
				continue
			}
			d.table(fmt.Sprintf("%s[%d]", path, i), m, e)
			continue
		}
		d.value(fmt.Sprintf("%s[%d]", path, i), it, e)
	}
	v.Set(out)
	return true
}

// stringMap fills a map[string]string from a table whose values are
// strings, booleans or numbers, kept as they are written; the schema's
// validation gives them their meaning (profile fields, for one).
func (d *decoder) stringMap(path string, x any, v reflect.Value) bool {
	m, ok := x.(map[string]any)
	if !ok {
		d.mismatch(path, "a table", x)
		return false
	}
	out := reflect.MakeMapWithSize(v.Type(), len(m))
	for k, val := range m {
		s, ok := tomlScalarText(val).(string)
		if !ok {
			d.mismatch(joinPath(path, k), "a string, boolean or number", val)
			d.p.bad[joinPath(path, k)] = true
			continue
		}
		out.SetMapIndex(reflect.ValueOf(k), reflect.ValueOf(s))
	}
	v.Set(out)
	return true
}

// tooBig reports whether x is an integer too large for TOML's 64 bits,
// which the parser (or a --set) left as a string of digits.
func tooBig(x any) bool {
	s, ok := x.(string)
	if !ok || len(s) > 100 {
		return false
	}
	_, err := strconv.ParseInt(s, 10, 64)
	return errors.Is(err, strconv.ErrRange)
}

func (d *decoder) mismatch(path, want string, found any) {
	d.p.valueError(path, "expected %s, found %s", want, describe(found))
}

// describe names a TOML value for an error message.
func describe(x any) string {
	switch v := x.(type) {
	case string:
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		return "the string " + strconv.Quote(v)
	case int64:
		return fmt.Sprintf("the integer %d", v)
	case float64:
		return fmt.Sprintf("the float %v", v)
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case map[string]any:
		return "a table"
	case []map[string]any, []any:
		return "an array"
	default:
		return fmt.Sprintf("a date or time (%v)", v)
	}
}

// fieldSet is the schema of one struct type: its TOML key names, in
// declaration order, and their field indexes.
type fieldSet struct {
	names  []string
	byName map[string]int
	// scalar marks the string fields (or string arrays) tagged
	// ",scalar": they take any scalar, kept as its TOML text, as --set
	// takes a value (a sweep's values = [15, 30] or ["15s", "30s"]).
	scalar map[string]bool
}

func schemaFields(t reflect.Type) fieldSet {
	fs := fieldSet{byName: make(map[string]int), scalar: make(map[string]bool)}
	for i := 0; i < t.NumField(); i++ {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fs.names = append(fs.names, name)
		fs.byName[name] = i
		fs.scalar[name] = slices.Contains(strings.Split(opts, ","), "scalar")
	}
	return fs
}

// tomlScalarText is a TOML scalar as text: a string as it is, a boolean or a
// number as TOML writes it. Anything else is returned unchanged, for the
// decoder to reject.
func tomlScalarText(x any) any {
	switch e := x.(type) {
	case bool:
		return strconv.FormatBool(e)
	case int64:
		return strconv.FormatInt(e, 10)
	case float64:
		return strconv.FormatFloat(e, 'g', -1, 64)
	case []any:
		out := make([]any, len(e))
		for i, v := range e {
			out[i] = tomlScalarText(v)
		}
		return out
	}
	return x
}

// suggest says which known key an unknown one was probably meant to be.
func suggest(key string, known []string) string {
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return fmt.Sprintf(" %q (keys are case-sensitive: did you mean %q?)", key, k)
		}
	}
	if best, ok := nearest(key, known, 2); ok {
		return fmt.Sprintf(" %q (did you mean %q?)", key, best)
	}
	return fmt.Sprintf(" %q (expected one of: %s)", key, strings.Join(known, ", "))
}

// nearest returns the known name closest to name by edit distance, if it
// is at most maxDist edits away; the first of equally close names wins.
func nearest(name string, known []string, maxDist int) (string, bool) {
	best, bestDist, found := "", maxDist+1, false
	for _, k := range known {
		if dist := editDistance(name, k); dist < bestDist {
			best, bestDist, found = k, dist, true
		}
	}
	return best, found
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// joinPath appends one key to a path, quoting it unless it is a bare key.
func joinPath(path, key string) string {
	if !isBareKey(key) {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func isBareKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
